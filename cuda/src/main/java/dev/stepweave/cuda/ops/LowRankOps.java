package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;

import dev.stepweave.cuda.blas.Gemm;
import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Per-row low-rank updates of linear layers (LoRA adapters): {@code addLowRank} and {@code
 * linearLowRank} for every row of a call in a few launches, whatever mix of updates the rows have.
 *
 * <p>The rows are first grouped into <em>blocks</em>: the longest equal runs of consecutive rows
 * with the same updates that tile the batch ({@link Blocks}) — one block when every row shares its
 * updates (a request's CFG rows, a batch on one adapter set), one per row when they all differ.
 * Each block's updates are then one rank-{@code R} product: its down factors stacked along the rank
 * ({@code [R, in]}) and its up factors, scales folded in, side by side ({@code [out, R]}), zero-
 * padded to the largest block's rank; one kernel ({@code lowrank.cu}) gathers every block's stacks,
 * or none is needed when a single block has a single update (its factors are used as they are, the
 * scale as the GEMM's alpha).
 *
 * <p>Two ways to apply them, chosen per layer by the bytes each moves ({@link #merges}):
 *
 * <ul>
 *   <li><b>unmerged</b> ({@code addLowRank}): {@code T = x·Dᵀ} and {@code y += T·Uᵀ} as two
 *       strided-batched GEMMs over the blocks, the second accumulating into {@code y} in place
 *       (beta 1). Its cost grows with the activations: a pass over {@code x} and a read and write
 *       of {@code y} per layer.
 *   <li><b>merged</b> ({@code linearLowRank}): each block's weight {@code W + U·D} is made for this
 *       call (one broadcast copy of W and one batched GEMM accumulating {@code U·D} into the
 *       copies) and the layer runs as one batched GEMM over the blocks with their own weights, bias
 *       and GELU epilogues as without adapters. Its cost grows with the weights times the blocks,
 *       not with the tokens: for a 480p video's 32 760 tokens it is a small fraction of the
 *       unmerged passes. The shared weights are never written. In the BF16 mode the merged weight
 *       is rounded to BF16 once (as a merged LoRA is); the tests hold it to the BF16 bound.
 * </ul>
 *
 * Everything is device work on the backend's stream with host values passed by value (kernel
 * arguments, GEMM scalars), and temporaries come from the allocator and go back to it once issued,
 * so both paths record into CUDA graphs (the factors' addresses are recorded: a graph key must name
 * the adapters, as {@code GraphKey.adapters} does).
 */
public final class LowRankOps {
  // lowrank.cu's LOW_RANK_BLOCKS, LOW_RANK_ENTRIES and the layout of its LowRankTable.
  private static final int TABLE_BLOCKS = 63;
  private static final int TABLE_ENTRIES = 64;
  private static final long ENTRIES_AT = 8 + 4L * (TABLE_BLOCKS + 1);
  private static final long ENTRY_BYTES = 32;
  private static final long TABLE_BYTES = ENTRIES_AT + TABLE_ENTRIES * ENTRY_BYTES;

  private final Operands operands;
  private final DeviceTensors tensors;
  private final Kernels kernels;
  private final Gemm gemm;
  private final MatrixOps matrix;
  private final ElementwiseOps elementwise;

  LowRankOps(Operands operands, Gemm gemm, MatrixOps matrix, ElementwiseOps elementwise) {
    this.operands = operands;
    this.tensors = operands.tensors();
    this.kernels = tensors.kernels();
    this.gemm = gemm;
    this.matrix = matrix;
    this.elementwise = elementwise;
  }

  /**
   * The batch rows in {@code count()} equal consecutive groups of {@code rowsPerBlock} rows that
   * share their updates, the updates of each, and the largest total rank of a group.
   */
  record Blocks(int rowsPerBlock, List<List<LowRank>> updates, int rank) {
    int count() {
      return updates.size();
    }

    static Blocks of(List<List<LowRank>> rows) {
      int b = rows.size();
      if (b == 0) {
        return new Blocks(1, List.of(), 0);
      }
      int g = b;
      while (b % g != 0 || !uniformRuns(rows, g)) {
        g--;
      }
      List<List<LowRank>> updates = new ArrayList<>(b / g);
      int rank = 0;
      for (int i = 0; i < b; i += g) {
        List<LowRank> own = rows.get(i);
        updates.add(own);
        rank = Math.max(rank, own.stream().mapToInt(LowRank::rank).sum());
      }
      return new Blocks(g, updates, rank);
    }

    private static boolean uniformRuns(List<List<LowRank>> rows, int g) {
      for (int i = 0; i < rows.size(); i++) {
        if (!same(rows.get(i), rows.get(i - i % g))) {
          return false;
        }
      }
      return true;
    }

    /** The same factor tensors at the same scales, in the same order. */
    private static boolean same(List<LowRank> a, List<LowRank> b) {
      if (a.size() != b.size()) {
        return false;
      }
      for (int j = 0; j < a.size(); j++) {
        LowRank u = a.get(j), v = b.get(j);
        if (u.down() != v.down() || u.up() != v.up() || Float.compare(u.scale(), v.scale()) != 0) {
          return false;
        }
      }
      return true;
    }
  }

  /**
   * Whether making each block's merged weight moves fewer bytes than the unmerged passes over the
   * activations: about 5 weight-sized passes per block (copy in and out, the accumulating GEMM's
   * read and write, the batched GEMM reading one weight per block) against, per row, one read of x
   * and a read and write of y (two more for a separate GELU).
   */
  static boolean merges(Blocks blocks, long rows, int in, int out, boolean gelu) {
    long merged = 5L * blocks.count() * in * out;
    long unmerged = rows * (in + 2L * out + (gelu ? 2L * out : 0));
    return merged < unmerged;
  }

  /**
   * {@code y [B, L, out]} plus every row's updates of {@code x [B, L, in]}, into y where it can.
   */
  public Tensor addLowRank(Tensor y, Tensor x, List<List<LowRank>> rows) {
    OpShapes.lowRank(y, x, rows);
    Blocks blocks = Blocks.of(rows);
    int in = x.dim(2), out = y.dim(2);
    if (blocks.rank() == 0 || y.numel() == 0 || in == 0) {
      return y;
    }
    boolean bf16 = operands.keepsBf16(x) && y.dtype() == DType.BF16;
    DType dtype = bf16 ? DType.BF16 : DType.F32;
    Tensor yd = tensors.onDevice(y);
    // y is consumed: the product accumulates into it unless it must be converted first.
    Tensor acc = yd.dtype() == dtype && yd.isContiguous() ? yd : tensors.convert(yd, dtype);
    Tensor xd = bf16 ? operands.bf16(x) : tensors.f32(x);
    Stacks s = stacks(blocks, dtype, in, out);
    int count = blocks.count(), r = s.rank();
    int m = Math.multiplyExact(blocks.rowsPerBlock(), x.dim(1));
    Tensor t = tensors.empty(dtype, count, m, r);
    gemm.run(
        new Gemm.Shape(
            m,
            r,
            in,
            false,
            in,
            true,
            in,
            r,
            count,
            (long) m * in,
            (long) r * in,
            (long) m * r,
            0L,
            bf16,
            bf16,
            Gemm.Epilogue.NONE,
            m),
        addr(xd),
        addr(s.down()),
        addr(t),
        0L);
    gemm.accumulate(
        new Gemm.Shape(
            m,
            out,
            r,
            false,
            r,
            true,
            r,
            out,
            count,
            (long) m * r,
            (long) out * r,
            (long) m * out,
            0L,
            bf16,
            bf16,
            Gemm.Epilogue.NONE,
            m),
        s.alpha(),
        addr(t),
        addr(s.up()),
        addr(acc));
    tensors.release(t);
    s.release(tensors);
    tensors.releaseDerived(xd, x);
    if (acc.dtype() != y.dtype()) {
      Tensor converted = tensors.convert(acc, y.dtype());
      tensors.release(acc);
      return converted;
    }
    return acc;
  }

  /**
   * {@code linear(x, w, bias)} plus every row's updates, then GELU (tanh) when {@code gelu}: merged
   * or unmerged as {@link #merges} decides.
   */
  public Tensor linearLowRank(
      Tensor x, Tensor w, Tensor bias, boolean gelu, List<List<LowRank>> rows) {
    OpShapes.linearLowRank(x, w, bias, rows);
    Blocks blocks = Blocks.of(rows);
    int in = w.dim(1), out = w.dim(0);
    if (blocks.rank() == 0 || !merges(blocks, (long) x.dim(0) * x.dim(1), in, out, gelu)) {
      Tensor y = addLowRank(matrix.linear(x, w, bias, false), x, rows);
      return gelu ? elementwise.gelu(y, true) : y;
    }
    Tensor wd = tensors.onDevice(w);
    DType dtype = wd.dtype() == DType.BF16 ? DType.BF16 : DType.F32;
    Tensor base = dtype == DType.BF16 ? tensors.contiguous(wd) : tensors.f32(wd);
    Stacks s = stacks(blocks, dtype, in, out);
    int count = blocks.count(), r = s.rank();
    Tensor merged = tensors.empty(dtype, count, out, in);
    tensors.copy(base.unsqueeze(0).expand(count, out, in), merged);
    boolean bf16 = dtype == DType.BF16;
    gemm.accumulate(
        new Gemm.Shape(
            out,
            in,
            r,
            false,
            r,
            false,
            in,
            in,
            count,
            (long) out * r,
            (long) r * in,
            (long) out * in,
            0L,
            bf16,
            bf16,
            Gemm.Epilogue.NONE,
            out),
        s.alpha(),
        addr(s.up()),
        addr(s.down()),
        addr(merged));
    s.release(tensors);
    tensors.releaseDerived(base, w);
    // As CudaBackend.linearGeluTanh: the GELU epilogue in the BF16 mode, a separate GELU in F32.
    boolean fused = gelu && operands.bf16Mode();
    Tensor y =
        count == 1
            ? matrix.linear(x, merged.reshape(out, in), bias, fused)
            : matrix.linearPerBlock(x, merged, bias, fused);
    tensors.release(merged);
    return gelu && !fused ? elementwise.gelu(y, true) : y;
  }

  /** How {@link #linearLowRank} of these arguments runs, in words (tests check the path). */
  public String path(Tensor x, Tensor w, boolean gelu, List<List<LowRank>> rows) {
    Blocks blocks = Blocks.of(rows);
    if (blocks.rank() == 0) {
      return "plain";
    }
    boolean merged = merges(blocks, (long) x.dim(0) * x.dim(1), w.dim(1), w.dim(0), gelu);
    return (merged ? "merged" : "unmerged")
        + ", "
        + blocks.count()
        + " block(s) of "
        + blocks.rowsPerBlock()
        + " row(s), rank "
        + blocks.rank();
  }

  /**
   * Every block's factors as one rank-{@code rank} product {@code alpha · up · down}: {@code down
   * [count, rank, in]}, {@code up [count, out, rank]}; {@code gathered} when they are stacks made
   * for this call (released after use), not a single update's own factors.
   */
  private record Stacks(Tensor down, Tensor up, int rank, float alpha, boolean gathered) {
    void release(DeviceTensors tensors) {
      if (gathered) {
        tensors.release(down);
        tensors.release(up);
      }
    }
  }

  private Stacks stacks(Blocks blocks, DType dtype, int in, int out) {
    if (blocks.count() == 1 && blocks.updates().getFirst().size() == 1) {
      LowRank u = blocks.updates().getFirst().getFirst();
      Tensor down = tensors.onDevice(u.down()), up = tensors.onDevice(u.up());
      if (down.dtype() == dtype
          && up.dtype() == dtype
          && down.isContiguous()
          && up.isContiguous()) {
        return new Stacks(down, up, u.rank(), u.scale(), false);
      }
    }
    int count = blocks.count(), rank = blocks.rank();
    Tensor down = tensors.empty(dtype, count, rank, in);
    Tensor up = tensors.empty(dtype, count, out, rank);
    // The kernel's table holds at most TABLE_BLOCKS blocks and TABLE_ENTRIES updates: one launch
    // per run of blocks that fits.
    int from = 0;
    while (from < count) {
      int to = from, entries = 0;
      while (to < count
          && to - from < TABLE_BLOCKS
          && entries + blocks.updates().get(to).size() <= TABLE_ENTRIES) {
        entries += blocks.updates().get(to).size();
        to++;
      }
      if (to == from) {
        throw new IllegalArgumentException(
            "a batch row has "
                + blocks.updates().get(from).size()
                + " low-rank updates of one layer; at most "
                + TABLE_ENTRIES
                + " are supported");
      }
      gather(blocks.updates().subList(from, to), down, up, from, rank, in, out);
      from = to;
    }
    return new Stacks(down, up, rank, 1f, true);
  }

  /**
   * One launch of {@code gather_low_rank} for {@code part}, blocks {@code first}.. of the stacks.
   */
  private void gather(
      List<List<LowRank>> part, Tensor down, Tensor up, int first, int rank, int in, int out) {
    List<Tensor> dense = new ArrayList<>();
    long elementBytes = down.dtype().byteSize();
    try (Launch l =
        kernels.launch("lowrank.cu", "gather_low_rank_" + DeviceTensors.code(down.dtype()))) {
      MemorySegment table = l.arena().allocate(TABLE_BYTES, 8);
      table.set(ValueLayout.JAVA_INT, 0, part.size());
      int entry = 0;
      for (int b = 0; b < part.size(); b++) {
        table.set(ValueLayout.JAVA_INT, 8 + 4L * b, entry);
        int offset = 0;
        for (LowRank u : part.get(b)) {
          Tensor d = tensors.contiguous(u.down()), p = tensors.contiguous(u.up());
          dense.add(d == u.down() ? null : d);
          dense.add(p == u.up() ? null : p);
          long at = ENTRIES_AT + entry * ENTRY_BYTES;
          table.set(ValueLayout.JAVA_LONG, at, addr(d));
          table.set(ValueLayout.JAVA_LONG, at + 8, addr(p));
          table.set(ValueLayout.JAVA_FLOAT, at + 16, u.scale());
          table.set(ValueLayout.JAVA_INT, at + 20, u.rank());
          table.set(ValueLayout.JAVA_INT, at + 24, offset);
          table.set(ValueLayout.JAVA_INT, at + 28, factorCode(d, p));
          offset += u.rank();
          entry++;
        }
      }
      table.set(ValueLayout.JAVA_INT, 4, entry);
      table.set(ValueLayout.JAVA_INT, 8 + 4L * part.size(), entry);
      long downAt = addr(down) + (long) first * rank * in * elementBytes;
      long upAt = addr(up) + (long) first * out * rank * elementBytes;
      l.struct(table).ptr(downAt).ptr(upAt).i32(rank).i32(in).i32(out);
      kernels.elementwise(l, (long) part.size() * rank * ((long) in + out));
    }
    for (Tensor t : dense) {
      if (t != null) {
        tensors.release(t);
      }
    }
  }

  /** The kernel's dtype flag of a factor pair: 1 for BF16, 0 for F32 (others are converted). */
  private static int factorCode(Tensor down, Tensor up) {
    if (down.dtype() != up.dtype() || (down.dtype() != DType.BF16 && down.dtype() != DType.F32)) {
      throw new IllegalArgumentException(
          "low-rank factors must be both F32 or both BF16, got " + down + " and " + up);
    }
    return down.dtype() == DType.BF16 ? 1 : 0;
  }
}
