package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;

/** Reductions over a dimension followed by a rescale: the norms and softmax. */
final class Norms {
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
    if (t == null) {
      return null;
    }
    if (t.numel() != n) {
      throw new IllegalArgumentException(what + " has " + t.numel() + " elements, expected " + n);
    }
    return Dense.segment(t);
  }

  Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    int n = x.dim(-1);
    MemorySegment w = optional(weight, n, "layerNorm weight");
    MemorySegment b = optional(bias, n, "layerNorm bias");
    return perRow(
        x,
        (in, out, s, len) -> {
          float sum = 0f;
          for (int i = 0; i < len; i++) {
            sum += Dense.get(in, s + i);
          }
          float mean = sum / len;
          float sq = 0f;
          for (int i = 0; i < len; i++) {
            float d = Dense.get(in, s + i) - mean;
            sq += d * d;
          }
          float inv = 1f / (float) Math.sqrt(sq / len + eps);
          for (int i = 0; i < len; i++) {
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
          float sq = 0f;
          for (int i = 0; i < len; i++) {
            float v = Dense.get(in, s + i);
            sq += v * v;
          }
          float inv = 1f / (float) Math.sqrt(sq / len + eps);
          for (int i = 0; i < len; i++) {
            float y = Dense.get(in, s + i) * inv;
            Dense.set(out, s + i, w == null ? y : y * Dense.get(w, i));
          }
        });
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
            float e = (float) Math.exp(Dense.get(in, s + i) - max);
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
