package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;

import dev.stepweave.cuda.blas.Gemm;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/** Matrix products: {@code linear} (with its fused bias and GELU epilogues) and {@code matmul}. */
public final class MatrixOps {
  private final Operands operands;
  private final DeviceTensors tensors;
  private final Gemm gemm;
  private final ElementwiseOps elementwise;

  MatrixOps(Operands operands, Gemm gemm, ElementwiseOps elementwise) {
    this.operands = operands;
    this.tensors = operands.tensors();
    this.gemm = gemm;
    this.elementwise = elementwise;
  }

  /**
   * {@code x @ w^T + bias}, then GELU (tanh) when {@code gelu}. A BF16 x in the BF16 mode runs a
   * BF16 GEMM (an F32 weight read through a BF16 copy made for the call) and gives BF16; otherwise
   * the result is F32.
   */
  public Tensor linear(Tensor x, Tensor w, Tensor bias, boolean gelu) {
    return linear(x, w, 1, bias, gelu);
  }

  /**
   * Like {@link #linear}, with a weight per block of rows: x's rows (all but the last dimension,
   * flattened) form {@code blocks} equal consecutive groups, group {@code i} multiplied by {@code
   * w[i]} — one strided-batched GEMM.
   *
   * @param w {@code [blocks, out, in]}
   */
  public Tensor linearPerBlock(Tensor x, Tensor w, Tensor bias, boolean gelu) {
    if (w.rank() != 3) {
      throw new IllegalArgumentException("per-block weights must be [blocks, out, in], got " + w);
    }
    return linear(x, w, w.dim(0), bias, gelu);
  }

  private Tensor linear(Tensor x, Tensor w, int blocks, Tensor bias, boolean gelu) {
    int k = w.dim(-1), n = w.dim(-2);
    int[] shape = OpShapes.linear(x, blocks == 1 ? w : w.slice(0, 0, 1).reshape(n, k), bias);
    int rows = 1;
    for (int i = 0; i < x.rank() - 1; i++) {
      rows = Math.multiplyExact(rows, x.dim(i));
    }
    if (rows % blocks != 0) {
      throw new IllegalArgumentException(rows + " rows do not split into " + blocks + " blocks");
    }
    int m = rows / blocks;
    DType outType = operands.keepsBf16(x) ? DType.BF16 : DType.F32;
    if (Tensor.numel(shape) == 0) {
      return tensors.empty(outType, shape);
    }
    if (k == 0) {
      Tensor zero = tensors.zeros(DType.F32, shape);
      Tensor r = bias == null ? zero : elementwise.add(zero, bias);
      r = gelu ? elementwise.gelu(r, true) : r;
      return r.dtype() == outType ? r : tensors.convert(r, outType);
    }
    // A BF16 activation meets an F32 weight in the BF16 mode where a trainer computes with its F32
    // masters: the GEMM reads a BF16 copy made for this call (torch's autocast), as serving reads
    // its BF16 weights. Not cached: the weight changes every step, and a merged or other
    // temporary weight would leave a copy behind.
    boolean castWeight = operands.keepsBf16(x) && w.dtype() == DType.F32;
    boolean bf16 = castWeight || tensors.onDevice(w).dtype() == DType.BF16;
    boolean bf16Out = bf16 && outType == DType.BF16;
    Tensor xd = bf16 ? operands.bf16(x) : tensors.f32(x);
    Tensor wd = castWeight ? operands.bf16(w) : bf16 ? tensors.contiguous(w) : tensors.f32(w);
    Tensor bd = bias == null ? null : bf16Out ? operands.bf16(bias) : tensors.f32(bias);
    Tensor out = tensors.empty(bf16Out ? DType.BF16 : DType.F32, shape);
    Gemm.Epilogue epilogue =
        bd == null
            ? (gelu ? Gemm.Epilogue.GELU_TANH : Gemm.Epilogue.NONE)
            : (gelu ? Gemm.Epilogue.GELU_TANH_BIAS : Gemm.Epilogue.BIAS);
    // One block: a plain GEMM (strides unused), its algorithm that of one item's rows; more: the
    // bias vector is shared by every block.
    long strideA = blocks == 1 ? 0 : (long) m * k;
    long strideB = blocks == 1 ? 0 : (long) n * k;
    long strideC = blocks == 1 ? 0 : (long) m * n;
    Gemm.Shape s =
        new Gemm.Shape(
            m,
            n,
            k,
            false,
            k,
            true,
            k,
            n,
            blocks,
            strideA,
            strideB,
            strideC,
            0L,
            bf16,
            bf16Out,
            epilogue,
            blocks == 1 ? itemRows(x, m) : m);
    gemm.run(s, addr(xd), addr(wd), addr(out), addr(bd));
    tensors.releaseDerived(xd, x);
    tensors.releaseDerived(wd, w);
    if (bias != null) {
      tensors.releaseDerived(bd, bias);
    }
    if (out.dtype() != outType) {
      // A BF16 x with a weight of neither GEMM type (a host F16 one, uploaded as F32): F32 GEMM.
      Tensor converted = tensors.convert(out, outType);
      tensors.releaseDerived(out, converted);
      return converted;
    }
    return out;
  }

  /**
   * {@code linear(x, w[i], bias[i])} for each of the G stacked weights {@code w [G, N, K]} (bias
   * {@code [G, N]}): one strided-batched GEMM that reads x once per batch with stride 0, writes the
   * G results into one {@code [G, ..., N]} tensor and adds each its own bias vector. Returns that
   * tensor's slices. Needs {@link #stacksInOneGemm}.
   */
  /**
   * Whether {@link #linearStacked} runs for these operands: several BF16 weights, a BF16 x in the
   * BF16 mode, and rows and inputs to multiply (else each layer is a {@link #linear} of its own).
   */
  public boolean stacksInOneGemm(Tensor x, Tensor w) {
    return w.rank() == 3
        && w.dim(0) > 1
        && w.dim(1) > 0
        && w.dim(2) > 0
        && x.numel() > 0
        && tensors.onDevice(w).dtype() == DType.BF16
        && operands.keepsBf16(x);
  }

  public List<Tensor> linearStacked(Tensor x, Tensor w, Tensor bias) {
    int[] shape = OpShapes.linearStacked(x, w, bias);
    if (!stacksInOneGemm(x, w)) {
      throw new IllegalArgumentException("no batched GEMM for x " + x + " and weights " + w);
    }
    int g = w.dim(0), n = w.dim(1), k = w.dim(2);
    int m = Math.toIntExact(Tensor.numel(shape) / n);
    Tensor xd = operands.bf16(x);
    Tensor wd = tensors.contiguous(w);
    Tensor bd = bias == null ? null : operands.bf16(bias);
    Tensor out = tensors.empty(DType.BF16, OpShapes.stacked(g, shape));
    Gemm.Shape s =
        new Gemm.Shape(
            m,
            n,
            k,
            false,
            k,
            true,
            k,
            n,
            g,
            0L,
            (long) n * k,
            (long) m * n,
            bd == null ? 0L : n,
            true,
            true,
            bd == null ? Gemm.Epilogue.NONE : Gemm.Epilogue.BIAS,
            itemRows(x, m));
    gemm.run(s, addr(xd), addr(wd), addr(out), addr(bd));
    tensors.releaseDerived(xd, x);
    tensors.releaseDerived(wd, w);
    if (bias != null) {
      tensors.releaseDerived(bd, bias);
    }
    List<Tensor> parts = new ArrayList<>(g);
    for (int i = 0; i < g; i++) {
      parts.add(out.select(0, i));
    }
    return parts;
  }

  /**
   * The rows of one item of x's first dimension (a request's rows in a batched call), whose results
   * must not depend on how many items share the GEMM ({@code Backend.linear}'s contract). A 2-D x
   * is one item: its rows run the algorithm chosen for all of them (as one item's rows, an 8192-row
   * GEMM would run the algorithm chosen for a single row, at a tenth of the speed).
   */
  private static int itemRows(Tensor x, int rows) {
    return x.rank() < 3 || x.dim(0) == 0 ? rows : rows / x.dim(0);
  }

  /**
   * Batched {@code a @ b} with broadcast batch dimensions, F32 result. Two BF16 operands in the
   * BF16 mode (a BF16 training step's backward products) run one BF16 GEMM with F32 accumulation,
   * otherwise an F32 GEMM. An operand already of the GEMM's type is read through its strides where
   * it is a row-major or transposed matrix with one batch stride (a transpose or a head's slice
   * costs no copy); any other is gathered into a contiguous copy of that type.
   */
  public Tensor matmul(Tensor a, Tensor b) {
    int[] batch = OpShapes.matmulBatch(a, b);
    int m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
    int[] outShape = OpShapes.withMatrix(batch, m, n);
    long count = Tensor.numel(batch);
    if (count == 0 || m == 0 || n == 0 || k == 0) {
      return tensors.zeros(DType.F32, outShape);
    }
    boolean bf16 = operands.keepsBf16(a) && operands.keepsBf16(b);
    Operand av = operand(a, OpShapes.withMatrix(batch, m, k), bf16);
    Operand bv = operand(b, OpShapes.withMatrix(batch, k, n), bf16);
    Tensor out = tensors.empty(DType.F32, outShape);
    Gemm.Shape s =
        new Gemm.Shape(
            m,
            n,
            k,
            av.transposed(),
            av.ld(),
            bv.transposed(),
            bv.ld(),
            n,
            Math.toIntExact(count),
            av.batchStride(),
            bv.batchStride(),
            (long) m * n,
            0L,
            bf16,
            false,
            Gemm.Epilogue.NONE,
            m);
    gemm.run(s, addr(av.data()), addr(bv.data()), addr(out), 0L);
    release(av, a);
    release(bv, b);
    return out;
  }

  /**
   * A {@code [..., rows, cols]} GEMM operand: its data (a view of the operand on this device, or a
   * contiguous copy), whether its matrices are stored transposed, their leading dimension and the
   * batch stride; {@code here} is the operand on this device (an upload of a host one).
   */
  private record Operand(Tensor data, Tensor here, boolean transposed, long ld, long batchStride) {}

  private Operand operand(Tensor t, int[] shape, boolean bf16) {
    Tensor here = tensors.onDevice(t);
    Tensor view = here.expand(shape);
    if (view.dtype() == (bf16 ? DType.BF16 : DType.F32)) {
      Operand strided = strided(view, here);
      if (strided != null) {
        return strided;
      }
    }
    Tensor dense = bf16 ? operands.bf16(view) : tensors.f32(view);
    int rows = view.dim(-2), cols = view.dim(-1);
    return new Operand(dense, here, false, cols, (long) rows * cols);
  }

  /** Gives back what {@link #operand} made for this call alone. */
  private void release(Operand operand, Tensor original) {
    if (operand.data().storage() != operand.here().storage()) {
      tensors.releaseDerived(operand.data(), original);
    }
    tensors.releaseDerived(operand.here(), original);
  }

  /**
   * {@code view} read in place: each matrix row-major (unit column stride) or transposed (unit row
   * stride), and the batch dimensions one stride apart (or all broadcast); null otherwise.
   */
  private static Operand strided(Tensor view, Tensor here) {
    int rank = view.rank();
    int rows = view.dim(-2), cols = view.dim(-1);
    long rowStride = view.strides()[rank - 2], colStride = view.strides()[rank - 1];
    boolean transposed;
    long ld;
    if ((colStride == 1 || cols == 1) && (rows == 1 || rowStride >= Math.max(1, cols))) {
      transposed = false;
      ld = rows == 1 ? Math.max(1, cols) : rowStride;
    } else if ((rowStride == 1 || rows == 1) && (cols == 1 || colStride >= Math.max(1, rows))) {
      transposed = true;
      ld = cols == 1 ? Math.max(1, rows) : colStride;
    } else {
      return null;
    }
    long batchStride = -1;
    long span = 1;
    for (int d = rank - 3; d >= 0; d--) {
      if (view.dim(d) == 1) {
        continue;
      }
      long stride = view.strides()[d];
      if (batchStride < 0) {
        batchStride = stride;
      } else if (stride != batchStride * span) {
        return null;
      }
      span *= view.dim(d);
    }
    return new Operand(view, here, transposed, ld, Math.max(0, batchStride));
  }
}
