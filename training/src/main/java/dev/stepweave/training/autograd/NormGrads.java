package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Backward rules of the normalisations and softmax, on the host ({@link BackwardRule#onHost}). Row
 * statistics are recomputed from the saved input in double, so nothing but the input is kept
 * between the forward and the backward.
 */
final class NormGrads {
  private NormGrads() {}

  /**
   * LayerNorm over the last dimension: with x̂ = (x − μ)·r and ĝ = g·w, {@code dx = r·(ĝ − mean(ĝ)
   * − x̂·mean(ĝ·x̂))}, {@code dw = Σ g·x̂}, {@code db = Σ g}.
   */
  static BackwardRule layerNorm(Backend device, Tensor x, Tensor weight, Tensor bias, float eps) {
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          int n = x.dim(-1);
          int rows = g.length / n;
          float[] xv = Host.values(device, x);
          float[] w = weight == null ? null : Host.values(device, weight);
          boolean wantX = wanted.test(x);
          float[] dx = wantX ? new float[g.length] : null;
          // Σ over rows of g·x̂ (the weight's gradient) in [0, n), of g (the bias's) in [n, 2n).
          double[] sums =
              Host.parallelSums(
                  rows,
                  n,
                  2 * n,
                  (first, last, part) -> layerNormRows(xv, w, g, dx, n, eps, first, last, part));
          double[] dw = Arrays.copyOfRange(sums, 0, n);
          double[] db = Arrays.copyOfRange(sums, n, 2 * n);
          List<Contribution> out = new ArrayList<>(3);
          if (wantX) {
            out.add(new Contribution(x, dx));
          }
          if (weight != null && wanted.test(weight)) {
            out.add(new Contribution(weight, Host.floats(dw)));
          }
          if (bias != null && wanted.test(bias)) {
            out.add(new Contribution(bias, Host.floats(db)));
          }
          return out;
        });
  }

  /** Rows {@code [first, last)} of {@link #layerNorm}'s rule: dx (when wanted) and the sums. */
  private static void layerNormRows(
      float[] xv,
      float[] w,
      float[] g,
      float[] dx,
      int n,
      float eps,
      int first,
      int last,
      double[] sums) {
    double[] xhat = new double[n];
    double[] gh = new double[n];
    for (int r = first; r < last; r++) {
      int s = r * n;
      double mean = 0;
      for (int i = 0; i < n; i++) {
        mean += xv[s + i];
      }
      mean /= n;
      double var = 0;
      for (int i = 0; i < n; i++) {
        double d = xv[s + i] - mean;
        var += d * d;
      }
      double inv = 1 / Math.sqrt(var / n + eps);
      double meanG = 0;
      double meanGx = 0;
      for (int i = 0; i < n; i++) {
        xhat[i] = (xv[s + i] - mean) * inv;
        gh[i] = g[s + i] * (w == null ? 1 : w[i]);
        meanG += gh[i];
        meanGx += gh[i] * xhat[i];
        sums[i] += g[s + i] * xhat[i];
        sums[n + i] += g[s + i];
      }
      meanG /= n;
      meanGx /= n;
      if (dx != null) {
        for (int i = 0; i < n; i++) {
          dx[s + i] = (float) (inv * (gh[i] - meanG - xhat[i] * meanGx));
        }
      }
    }
  }

  /**
   * RMSNorm over the last dimension: with r = 1/√(mean(x²) + eps) and ĝ = g·w, {@code dx = r·ĝ −
   * x·r³·mean(ĝ·x)}, {@code dw = Σ g·x·r}.
   */
  static BackwardRule rmsNorm(Backend device, Tensor x, Tensor weight, float eps) {
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          int n = x.dim(-1);
          int rows = g.length / n;
          float[] xv = Host.values(device, x);
          float[] w = weight == null ? null : Host.values(device, weight);
          boolean wantX = wanted.test(x);
          float[] dx = wantX ? new float[g.length] : null;
          double[] dw =
              Host.parallelSums(
                  rows,
                  n,
                  n,
                  (first, last, part) -> {
                    for (int r = first; r < last; r++) {
                      int s = r * n;
                      double ms = 0;
                      for (int i = 0; i < n; i++) {
                        ms += (double) xv[s + i] * xv[s + i];
                      }
                      double inv = 1 / Math.sqrt(ms / n + eps);
                      double meanGx = 0;
                      for (int i = 0; i < n; i++) {
                        double gh = g[s + i] * (w == null ? 1 : w[i]);
                        meanGx += gh * xv[s + i];
                        part[i] += g[s + i] * xv[s + i] * inv;
                      }
                      meanGx /= n;
                      if (dx != null) {
                        for (int i = 0; i < n; i++) {
                          double gh = g[s + i] * (w == null ? 1 : w[i]);
                          dx[s + i] = (float) (inv * gh - xv[s + i] * inv * inv * inv * meanGx);
                        }
                      }
                    }
                  });
          List<Contribution> out = new ArrayList<>(2);
          if (wantX) {
            out.add(new Contribution(x, dx));
          }
          if (weight != null && wanted.test(weight)) {
            out.add(new Contribution(weight, Host.floats(dw)));
          }
          return out;
        });
  }

  /**
   * {@code y = x / max(‖x‖, eps)} along {@code dim}: {@code dx = (g − y·(g·y)) / ‖x‖} where the
   * norm exceeds eps, {@code g / eps} where it is clamped.
   */
  static BackwardRule l2Normalize(Backend device, Tensor x, int dim, float eps) {
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          if (!wanted.test(x)) {
            return List.of();
          }
          int axis = x.axis(dim);
          int n = x.dim(axis);
          int inner = 1;
          for (int d = axis + 1; d < x.rank(); d++) {
            inner *= x.dim(d);
          }
          int outer = g.length / (n * inner);
          float[] xv = Host.values(device, x);
          float[] dx = new float[g.length];
          for (int o = 0; o < outer; o++) {
            for (int in = 0; in < inner; in++) {
              int base = o * n * inner + in;
              double ss = 0;
              for (int i = 0; i < n; i++) {
                double v = xv[base + i * inner];
                ss += v * v;
              }
              double norm = Math.sqrt(ss);
              if (norm > eps) {
                double gy = 0;
                for (int i = 0; i < n; i++) {
                  gy += g[base + i * inner] * xv[base + i * inner] / norm;
                }
                for (int i = 0; i < n; i++) {
                  int at = base + i * inner;
                  dx[at] = (float) ((g[at] - xv[at] / norm * gy) / norm);
                }
              } else {
                for (int i = 0; i < n; i++) {
                  dx[base + i * inner] = g[base + i * inner] / eps;
                }
              }
            }
          }
          return List.of(new Contribution(x, dx));
        });
  }

  /** Softmax over the last dimension: {@code dx = y·(g − Σ g·y)}. */
  static BackwardRule softmax(Backend device, Tensor x, Tensor y) {
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          if (!wanted.test(x)) {
            return List.of();
          }
          int n = x.dim(-1);
          float[] yv = Host.values(device, y);
          float[] dx = new float[g.length];
          for (int s = 0; s < g.length; s += n) {
            double dot = 0;
            for (int i = 0; i < n; i++) {
              dot += (double) g[s + i] * yv[s + i];
            }
            for (int i = 0; i < n; i++) {
              dx[s + i] = (float) (yv[s + i] * (g[s + i] - dot));
            }
          }
          return List.of(new Contribution(x, dx));
        });
  }
}
