package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/** Reductions over a dimension followed by a rescale: the norms and softmax. */
final class Norms {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  private static final long GRAIN = 1 << 14;

  private final WorkPool pool;

  Norms(WorkPool pool) {
    this.pool = pool;
  }

  /** Calls {@code body(in, out, rowStart, n)} for every row of the last dimension. */
  private Tensor perRow(Tensor x, RowKernel body) {
    MemorySegment in = Dense.segment(x);
    Tensor out = Dense.output(x.shape());
    MemorySegment o = out.segment();
    int n = x.rank() == 0 ? 1 : x.dim(-1);
    long rows = n == 0 ? 0 : x.numel() / n;
    pool.forRange(
        rows,
        Math.max(1, GRAIN / Math.max(1, n)),
        (r0, r1) -> {
          for (long r = r0; r < r1; r++) {
            body.row(in, o, r * n, n);
          }
        });
    return out;
  }

  @FunctionalInterface
  private interface RowKernel {
    void row(MemorySegment in, MemorySegment out, long start, int n);
  }

  private static MemorySegment optional(Tensor t, int n, String what) {
    OpShapes.rowParameter(t, n, what);
    return t == null ? null : Dense.segment(t);
  }

  Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    int n = x.dim(-1);
    MemorySegment w = optional(weight, n, "layerNorm weight");
    MemorySegment b = optional(bias, n, "layerNorm bias");
    return perRow(
        x,
        (in, out, s, len) -> {
          float mean = sum(in, s, len) / len;
          float inv = 1f / (float) Math.sqrt(squaredDeviations(in, s, len, mean) / len + eps);
          int i = 0;
          for (; i < S.loopBound(len); i += L) {
            FloatVector y = load(in, s + i).sub(mean).mul(inv);
            if (w != null) {
              y = y.mul(load(w, i));
            }
            if (b != null) {
              y = y.add(load(b, i));
            }
            store(y, out, s + i);
          }
          for (; i < len; i++) {
            float y = (Dense.get(in, s + i) - mean) * inv;
            if (w != null) {
              y *= Dense.get(w, i);
            }
            if (b != null) {
              y += Dense.get(b, i);
            }
            Dense.set(out, s + i, y);
          }
        });
  }

  Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    int n = x.dim(-1);
    MemorySegment w = optional(weight, n, "rmsNorm weight");
    return perRow(
        x,
        (in, out, s, len) -> {
          float inv = 1f / (float) Math.sqrt(squaredDeviations(in, s, len, 0f) / len + eps);
          int i = 0;
          for (; i < S.loopBound(len); i += L) {
            FloatVector y = load(in, s + i).mul(inv);
            store(w == null ? y : y.mul(load(w, i)), out, s + i);
          }
          for (; i < len; i++) {
            float y = Dense.get(in, s + i) * inv;
            Dense.set(out, s + i, w == null ? y : y * Dense.get(w, i));
          }
        });
  }

  /**
   * {@code Σ (x - center)²} over a row when {@code squares}, else {@code Σ (x - center)}: lane-wise
   * partial sums, then the lanes and the tail added in index order, so the result is the same in
   * every JIT state.
   */
  private static float reduce(MemorySegment in, long s, int len, float center, boolean squares) {
    FloatVector acc = FloatVector.zero(S);
    int i = 0;
    for (; i < S.loopBound(len); i += L) {
      FloatVector d = load(in, s + i).sub(center);
      acc = squares ? d.fma(d, acc) : acc.add(d);
    }
    float total = 0f;
    for (int lane = 0; lane < L; lane++) {
      total += acc.lane(lane);
    }
    for (; i < len; i++) {
      float d = Dense.get(in, s + i) - center;
      total = squares ? Math.fma(d, d, total) : total + d;
    }
    return total;
  }

  private static float sum(MemorySegment in, long s, int len) {
    return reduce(in, s, len, 0f, false);
  }

  private static float squaredDeviations(MemorySegment in, long s, int len, float center) {
    return reduce(in, s, len, center, true);
  }

  private static FloatVector load(MemorySegment m, long index) {
    return FloatVector.fromMemorySegment(S, m, index * Float.BYTES, ByteOrder.nativeOrder());
  }

  private static void store(FloatVector v, MemorySegment m, long index) {
    v.intoMemorySegment(m, index * Float.BYTES, ByteOrder.nativeOrder());
  }

  Tensor softmax(Tensor x) {
    return perRow(
        x,
        (in, out, s, len) -> {
          float max = Float.NEGATIVE_INFINITY;
          for (int i = 0; i < len; i++) {
            max = Math.max(max, Dense.get(in, s + i));
          }
          float sum = 0f;
          for (int i = 0; i < len; i++) {
            float e = Exp.exp(Dense.get(in, s + i) - max);
            Dense.set(out, s + i, e);
            sum += e;
          }
          float inv = 1f / sum;
          for (int i = 0; i < len; i++) {
            Dense.set(out, s + i, Dense.get(out, s + i) * inv);
          }
        });
  }

  /** {@code x / max(‖x‖, eps)} along {@code dim}: viewed as {@code [outer, n, inner]}. */
  Tensor l2Normalize(Tensor x, int dim, float eps) {
    int a = x.axis(dim);
    int[] shape = x.shape();
    int n = shape[a];
    long inner = 1;
    for (int i = a + 1; i < shape.length; i++) {
      inner *= shape[i];
    }
    long outer = n == 0 || inner == 0 ? 0 : x.numel() / (n * inner);
    MemorySegment in = Dense.segment(x);
    Tensor out = Dense.output(shape);
    MemorySegment o = out.segment();
    long lanes = inner;
    pool.forRange(
        outer * lanes,
        Math.max(1, GRAIN / Math.max(1, n)),
        (c0, c1) -> {
          for (long c = c0; c < c1; c++) {
            long base = (c / lanes) * n * lanes + c % lanes;
            float sq = 0f;
            for (int i = 0; i < n; i++) {
              float v = Dense.get(in, base + i * lanes);
              sq += v * v;
            }
            float denom = Math.max((float) Math.sqrt(sq), eps);
            for (int i = 0; i < n; i++) {
              Dense.set(o, base + i * lanes, Dense.get(in, base + i * lanes) / denom);
            }
          }
        });
    return out;
  }
}
