package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.List;

/** Operations that move elements without arithmetic: concat, pad, upsample, embedding lookup. */
final class Shapes {
  private static final long GRAIN = 1 << 14;

  private final WorkPool pool;

  Shapes(WorkPool pool) {
    this.pool = pool;
  }

  Tensor concat(List<Tensor> parts, int dim) {
    int[] shape = OpShapes.concat(parts, dim);
    int a = parts.getFirst().axis(dim);
    int total = shape[a];
    Tensor out = Dense.output(shape);
    MemorySegment o = out.segment();
    long inner = 1;
    for (int i = a + 1; i < shape.length; i++) {
      inner *= shape[i];
    }
    long outer = 1;
    for (int i = 0; i < a; i++) {
      outer *= shape[i];
    }
    long outRow = total * inner;
    long at = 0;
    for (Tensor p : parts) {
      MemorySegment src = Dense.segment(p);
      long chunk = p.dim(a) * inner;
      long start = at;
      pool.forRange(
          outer,
          Math.max(1, GRAIN / Math.max(1, chunk)),
          (r0, r1) -> {
            for (long r = r0; r < r1; r++) {
              MemorySegment.copy(src, r * chunk * 4, o, (r * outRow + start) * 4, chunk * 4);
            }
          });
      at += chunk;
    }
    return out;
  }

  Tensor pad(Tensor x, int[] pads, float value) {
    OpShapes.Padding padding = OpShapes.pad(x, pads);
    int rank = x.rank();
    int[] shape = padding.shape();
    int[] before = padding.before();
    MemorySegment src = Dense.segment(x);
    int[] inShape = x.shape();
    long[] inStrides = Tensor.contiguousStrides(inShape);
    Tensor out = Dense.output(shape);
    MemorySegment o = out.segment();
    int inner = rank == 0 ? 1 : shape[rank - 1];
    long rows = inner == 0 ? 0 : out.numel() / inner;
    pool.forRange(
        rows,
        Math.max(1, GRAIN / Math.max(1, inner)),
        (r0, r1) -> {
          for (long r = r0; r < r1; r++) {
            long srcRow = 0;
            boolean inside = true;
            long rest = r;
            for (int d = rank - 2; d >= 0; d--) {
              int i = (int) (rest % shape[d]) - before[d];
              rest /= shape[d];
              inside &= i >= 0 && i < inShape[d];
              srcRow += i * inStrides[d];
            }
            for (int c = 0; c < inner; c++) {
              int ic = c - before[rank - 1];
              boolean hit = inside && ic >= 0 && ic < inShape[rank - 1];
              Dense.set(o, r * inner + c, hit ? Dense.get(src, srcRow + ic) : value);
            }
          }
        });
    return out;
  }

  Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    int[] shape = OpShapes.upsampleNearest2d(x, scaleH, scaleW);
    int h = x.dim(-2), w = x.dim(-1);
    MemorySegment src = Dense.segment(x);
    Tensor out = Dense.output(shape);
    MemorySegment o = out.segment();
    int ow = w * scaleW;
    long outRows = out.numel() / Math.max(1, ow);
    pool.forRange(
        ow == 0 ? 0 : outRows,
        Math.max(1, GRAIN / Math.max(1, ow)),
        (r0, r1) -> {
          for (long r = r0; r < r1; r++) {
            long plane = r / (h * (long) scaleH);
            long y = (r % (h * (long) scaleH)) / scaleH;
            long srcRow = (plane * h + y) * w;
            for (int c = 0; c < ow; c++) {
              Dense.set(o, r * ow + c, Dense.get(src, srcRow + c / scaleW));
            }
          }
        });
    return out;
  }

  Tensor embedding(Tensor table, Tensor ids) {
    int[] shape = OpShapes.embedding(table, ids);
    int vocab = table.dim(0), d = table.dim(1);
    long[] index = ids.toLongArray();
    for (long id : index) {
      if (id < 0 || id >= vocab) {
        throw new IllegalArgumentException(
            "embedding id " + id + " out of range for a table of " + vocab + " rows");
      }
    }
    MemorySegment src = Dense.segment(table);
    Tensor out = Dense.output(shape);
    MemorySegment o = out.segment();
    pool.forRange(
        index.length,
        Math.max(1, GRAIN / Math.max(1, d)),
        (r0, r1) -> {
          for (long r = r0; r < r1; r++) {
            MemorySegment.copy(src, index[(int) r] * d * 4, o, r * d * 4, d * 4L);
          }
        });
    return out;
  }

  Tensor sumLastDim(Tensor x) {
    int[] shape = OpShapes.sumLastDim(x);
    int n = x.dim(-1);
    MemorySegment src = Dense.segment(x);
    Tensor out = Dense.output(shape);
    MemorySegment o = out.segment();
    pool.forRange(
        out.numel(),
        Math.max(1, GRAIN / Math.max(1, n)),
        (r0, r1) -> {
          for (long r = r0; r < r1; r++) {
            float sum = 0f;
            for (int i = 0; i < n; i++) {
              sum += Dense.get(src, r * n + i);
            }
            Dense.set(o, r, sum);
          }
        });
    return out;
  }

  /**
   * {@code target += value} ({@code add}) or {@code target = value} through {@code target}'s
   * strides, row by row along its last dimension (rows in parallel: the target's elements are
   * distinct, {@link dev.stepweave.tensor.Backend#requireInPlaceTarget}).
   */
  void writeInto(Tensor target, Tensor value, boolean add) {
    Dense.requireHost(target);
    MemorySegment src = Dense.segment(value);
    MemorySegment dst = target.storage().segment();
    int rank = target.rank();
    if (rank == 0 || target.numel() == 0) {
      if (target.numel() == 1) {
        long at = target.offset();
        float v = Dense.get(src, 0);
        Dense.set(dst, at, add ? Dense.get(dst, at) + v : v);
      }
      return;
    }
    int[] shape = target.shape();
    long[] strides = target.strides();
    int inner = shape[rank - 1];
    long step = strides[rank - 1];
    long rows = target.numel() / inner;
    pool.forRange(
        rows,
        Math.max(1, GRAIN / Math.max(1, inner)),
        (r0, r1) -> {
          for (long r = r0; r < r1; r++) {
            long at = rowOffset(target, r);
            long from = r * inner;
            for (int j = 0; j < inner; j++, at += step) {
              float v = Dense.get(src, from + j);
              Dense.set(dst, at, add ? Dense.get(dst, at) + v : v);
            }
          }
        });
  }

  /** The storage element of row {@code row}'s first element (rows along the last dimension). */
  private static long rowOffset(Tensor t, long row) {
    long at = t.offset();
    for (int d = t.rank() - 2; d >= 0; d--) {
      int n = t.dim(d);
      at += (row % n) * t.stride(d);
      row /= n;
    }
    return at;
  }
}
