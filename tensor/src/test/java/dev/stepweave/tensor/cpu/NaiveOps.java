package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.List;

/**
 * Scalar reference implementations, written for obviousness: one output element at a time, index
 * arithmetic spelled out, reductions in double where the backend's float order may differ. Matrix
 * products use the backend's documented contract (one ascending fma chain per element) so they can
 * be compared bit for bit.
 */
final class NaiveOps {
  private NaiveOps() {}

  static Tensor linear(Tensor x, Tensor w, Tensor bias) {
    int k = w.dim(1), n = w.dim(0);
    float[] xs = x.toFloatArray();
    float[] ws = w.toFloatArray();
    float[] bs = bias == null ? null : bias.toFloatArray();
    int m = xs.length / k;
    float[] out = new float[m * n];
    for (int r = 0; r < m; r++) {
      for (int j = 0; j < n; j++) {
        float acc = 0f;
        for (int p = 0; p < k; p++) {
          acc = Math.fma(xs[r * k + p], ws[j * k + p], acc);
        }
        out[r * n + j] = bs == null ? acc : acc + bs[j];
      }
    }
    int[] shape = x.shape();
    shape[shape.length - 1] = n;
    return Tensor.of(out, shape);
  }

  static Tensor matmul(Tensor a, Tensor b) {
    int m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
    int[] batch =
        OpShapes.broadcast(
            Arrays.copyOf(a.shape(), a.rank() - 2), Arrays.copyOf(b.shape(), b.rank() - 2));
    int[] outShape = Arrays.copyOf(batch, batch.length + 2);
    outShape[batch.length] = m;
    outShape[batch.length + 1] = n;
    float[] out = new float[(int) Tensor.numel(outShape)];
    int[] idx = new int[outShape.length];
    for (int i = 0; i < out.length; i++) {
      unravel(i, outShape, idx);
      int row = idx[batch.length], col = idx[batch.length + 1];
      float acc = 0f;
      for (int p = 0; p < k; p++) {
        acc = Math.fma(at(a, idx, batch.length, row, p), at(b, idx, batch.length, p, col), acc);
      }
      out[i] = acc;
    }
    return Tensor.of(out, outShape);
  }

  /** Element {@code (row, col)} of the matrix of {@code t} at broadcast batch index {@code idx}. */
  private static float at(Tensor t, int[] idx, int batchRank, int row, int col) {
    int[] own = new int[t.rank()];
    int lead = batchRank - (t.rank() - 2);
    for (int d = 0; d < t.rank() - 2; d++) {
      own[d] = t.dim(d) == 1 ? 0 : idx[d + lead];
    }
    own[t.rank() - 2] = row;
    own[t.rank() - 1] = col;
    return t.getFloat(own);
  }

  static void unravel(long flat, int[] shape, int[] idx) {
    for (int d = shape.length - 1; d >= 0; d--) {
      idx[d] = (int) (flat % shape[d]);
      flat /= shape[d];
    }
  }

  static Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3), lk = k.dim(1), dv = v.dim(3);
    Tensor bv = bias == null ? null : bias.expand(b, h, lq, lk);
    float[] out = new float[b * lq * h * dv];
    for (int n = 0; n < b; n++) {
      for (int head = 0; head < h; head++) {
        for (int i = 0; i < lq; i++) {
          double[] s = new double[lk];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j < lk; j++) {
            double dot = 0;
            for (int c = 0; c < d; c++) {
              dot += (double) q.getFloat(n, i, head, c) * k.getFloat(n, j, head, c);
            }
            s[j] = dot * scale + (bv == null ? 0 : bv.getFloat(n, head, i, j));
            max = Math.max(max, s[j]);
          }
          double sum = 0;
          for (int j = 0; j < lk; j++) {
            s[j] = Math.exp(s[j] - max);
            sum += s[j];
          }
          for (int c = 0; c < dv; c++) {
            double acc = 0;
            for (int j = 0; j < lk; j++) {
              acc += s[j] * v.getFloat(n, j, head, c);
            }
            out[((n * lq + i) * h + head) * dv + c] = (float) (acc / sum);
          }
        }
      }
    }
    return Tensor.of(out, b, lq, h, dv);
  }

  /**
   * The gradients of {@link #attention} by the textbook formulas in double, the whole Lq×Lk
   * probability matrix of each head at once: {@code dV = Pᵀ·dO}, {@code dP = dO·Vᵀ}, {@code dS =
   * P∘(dP − rowsum(dP∘P))}, {@code dQ = scale·dS·K}, {@code dK = scale·dSᵀ·Q}; {@code [q, k, v,
   * bias]}, the last {@code [B, H, Lq, Lk]}.
   */
  static Tensor[] attentionBackward(
      Tensor q, Tensor k, Tensor v, Tensor bias, float scale, Tensor gradOut) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3), lk = k.dim(1), dv = v.dim(3);
    Tensor bv = bias == null ? null : bias.expand(b, h, lq, lk);
    float[] dq = new float[b * lq * h * d];
    float[] dk = new float[b * lk * h * d];
    float[] dvv = new float[b * lk * h * dv];
    float[] dBias = new float[b * h * lq * lk];
    for (int n = 0; n < b; n++) {
      for (int head = 0; head < h; head++) {
        double[][] p = new double[lq][lk];
        double[][] dp = new double[lq][lk];
        for (int i = 0; i < lq; i++) {
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j < lk; j++) {
            double dot = 0;
            for (int c = 0; c < d; c++) {
              dot += (double) q.getFloat(n, i, head, c) * k.getFloat(n, j, head, c);
            }
            p[i][j] = dot * scale + (bv == null ? 0 : bv.getFloat(n, head, i, j));
            max = Math.max(max, p[i][j]);
          }
          if (max == Double.NEGATIVE_INFINITY) {
            // Every key masked: no probability, no gradient.
            java.util.Arrays.fill(p[i], 0);
            continue;
          }
          double sum = 0;
          for (int j = 0; j < lk; j++) {
            p[i][j] = Math.exp(p[i][j] - max);
            sum += p[i][j];
          }
          double rowDot = 0;
          for (int j = 0; j < lk; j++) {
            p[i][j] /= sum;
            for (int c = 0; c < dv; c++) {
              dp[i][j] += (double) gradOut.getFloat(n, i, head, c) * v.getFloat(n, j, head, c);
            }
            rowDot += dp[i][j] * p[i][j];
          }
          for (int j = 0; j < lk; j++) {
            double ds = p[i][j] * (dp[i][j] - rowDot);
            dBias[((n * h + head) * lq + i) * lk + j] = (float) ds;
            for (int c = 0; c < d; c++) {
              dq[((n * lq + i) * h + head) * d + c] +=
                  (float) (scale * ds * k.getFloat(n, j, head, c));
            }
          }
        }
        for (int j = 0; j < lk; j++) {
          for (int c = 0; c < d; c++) {
            double acc = 0;
            for (int i = 0; i < lq; i++) {
              acc += dBias[((n * h + head) * lq + i) * lk + j] * (double) q.getFloat(n, i, head, c);
            }
            dk[((n * lk + j) * h + head) * d + c] = (float) (scale * acc);
          }
          for (int c = 0; c < dv; c++) {
            double acc = 0;
            for (int i = 0; i < lq; i++) {
              acc += p[i][j] * gradOut.getFloat(n, i, head, c);
            }
            dvv[((n * lk + j) * h + head) * dv + c] = (float) acc;
          }
        }
      }
    }
    return new Tensor[] {
      Tensor.of(dq, b, lq, h, d),
      Tensor.of(dk, b, lk, h, d),
      Tensor.of(dvv, b, lk, h, dv),
      Tensor.of(dBias, b, h, lq, lk)
    };
  }

  /**
   * Direct convolution; padded taps contribute {@code fma(w, 0, acc)} like the backend's im2col.
   */
  static Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    int nb = x.dim(0), c = x.dim(1), t = x.dim(2), hh = x.dim(3), ww = x.dim(4);
    int o = w.dim(0), kt = w.dim(2), kh = w.dim(3), kw = w.dim(4);
    int to = (t + 2 * padding[0] - kt) / stride[0] + 1;
    int ho = (hh + 2 * padding[1] - kh) / stride[1] + 1;
    int wo = (ww + 2 * padding[2] - kw) / stride[2] + 1;
    float[] out = new float[nb * o * to * ho * wo];
    int i = 0;
    for (int n = 0; n < nb; n++) {
      for (int oc = 0; oc < o; oc++) {
        for (int z = 0; z < to; z++) {
          for (int y = 0; y < ho; y++) {
            for (int xo = 0; xo < wo; xo++) {
              float acc = 0f;
              for (int ic = 0; ic < c; ic++) {
                for (int dz = 0; dz < kt; dz++) {
                  for (int dy = 0; dy < kh; dy++) {
                    for (int dx = 0; dx < kw; dx++) {
                      int zi = z * stride[0] - padding[0] + dz;
                      int yi = y * stride[1] - padding[1] + dy;
                      int xi = xo * stride[2] - padding[2] + dx;
                      boolean inside =
                          zi >= 0 && zi < t && yi >= 0 && yi < hh && xi >= 0 && xi < ww;
                      float xv = inside ? x.getFloat(n, ic, zi, yi, xi) : 0f;
                      acc = Math.fma(w.getFloat(oc, ic, dz, dy, dx), xv, acc);
                    }
                  }
                }
              }
              out[i++] = bias == null ? acc : acc + bias.getFloat(oc);
            }
          }
        }
      }
    }
    return Tensor.of(out, nb, o, to, ho, wo);
  }

  static Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    return perRow(
        x,
        row -> {
          double mean = 0;
          for (float v : row) {
            mean += v;
          }
          mean /= row.length;
          double var = 0;
          for (float v : row) {
            var += (v - mean) * (v - mean);
          }
          var /= row.length;
          float[] y = new float[row.length];
          for (int i = 0; i < row.length; i++) {
            double r = (row[i] - mean) / Math.sqrt(var + eps);
            r =
                r * (weight == null ? 1 : weight.getFloat(i))
                    + (bias == null ? 0 : bias.getFloat(i));
            y[i] = (float) r;
          }
          return y;
        });
  }

  static Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    return perRow(
        x,
        row -> {
          double ms = 0;
          for (float v : row) {
            ms += (double) v * v;
          }
          ms /= row.length;
          float[] y = new float[row.length];
          for (int i = 0; i < row.length; i++) {
            y[i] =
                (float) (row[i] / Math.sqrt(ms + eps) * (weight == null ? 1 : weight.getFloat(i)));
          }
          return y;
        });
  }

  static Tensor softmax(Tensor x) {
    return perRow(
        x,
        row -> {
          double max = Double.NEGATIVE_INFINITY;
          for (float v : row) {
            max = Math.max(max, v);
          }
          double sum = 0;
          for (float v : row) {
            sum += Math.exp(v - max);
          }
          float[] y = new float[row.length];
          for (int i = 0; i < row.length; i++) {
            y[i] = (float) (Math.exp(row[i] - max) / sum);
          }
          return y;
        });
  }

  static Tensor sumLastDim(Tensor x) {
    int[] shape = x.shape();
    shape[shape.length - 1] = 1;
    float[] in = x.toFloatArray();
    int n = x.dim(-1);
    float[] out = new float[in.length / n];
    for (int r = 0; r < out.length; r++) {
      double s = 0;
      for (int i = 0; i < n; i++) {
        s += in[r * n + i];
      }
      out[r] = (float) s;
    }
    return Tensor.of(out, shape);
  }

  static Tensor l2Normalize(Tensor x, int dim, float eps) {
    int[] shape = x.shape();
    int a = x.axis(dim);
    float[] out = new float[(int) x.numel()];
    int[] idx = new int[shape.length];
    for (int i = 0; i < out.length; i++) {
      unravel(i, shape, idx);
      int[] j = idx.clone();
      double sq = 0;
      for (int p = 0; p < shape[a]; p++) {
        j[a] = p;
        double v = x.getFloat(j);
        sq += v * v;
      }
      out[i] = (float) (x.getFloat(idx) / Math.max(Math.sqrt(sq), eps));
    }
    return Tensor.of(out, shape);
  }

  private interface RowFunction {
    float[] apply(float[] row);
  }

  private static Tensor perRow(Tensor x, RowFunction f) {
    float[] in = x.toFloatArray();
    int n = x.dim(-1);
    float[] out = new float[in.length];
    for (int r = 0; r < in.length / n; r++) {
      System.arraycopy(f.apply(Arrays.copyOfRange(in, r * n, r * n + n)), 0, out, r * n, n);
    }
    return Tensor.of(out, x.shape());
  }

  static double unary(UnaryOp op, double v) {
    return switch (op) {
      case NEG -> -v;
      case EXP -> Math.exp(v);
      case TANH -> Math.tanh(v);
      case SQRT -> Math.sqrt(v);
      case RSQRT -> 1 / Math.sqrt(v);
      case SIN -> Math.sin(v);
      case COS -> Math.cos(v);
      case RELU -> Math.max(v, 0);
      case SIGMOID -> 1 / (1 + Math.exp(-v));
      case ABS -> Math.abs(v);
      case SQUARE -> v * v;
    };
  }

  /** Erf from its Taylor series, exact in double for |x| < 4; beyond, erf is ±1 in float. */
  static double erf(double x) {
    if (Math.abs(x) >= 4) {
      return Math.signum(x);
    }
    double term = x, sum = x;
    for (int n = 1; n < 200; n++) {
      term *= -x * x / n;
      sum += term / (2 * n + 1);
    }
    return 2 / Math.sqrt(Math.PI) * sum;
  }

  /** Erfc for {@code z >= 0}; from its continued fraction where {@code 1 - erf} would cancel. */
  static double erfc(double z) {
    if (z < 2) {
      return 1 - erf(z);
    }
    double f = z;
    for (int n = 80; n >= 1; n--) {
      f = z + (n / 2.0) / f;
    }
    return Math.exp(-z * z) / Math.sqrt(Math.PI) / f;
  }

  static double gelu(double x, boolean tanh) {
    if (tanh) {
      double u = Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x);
      return u < 0 ? 0.5 * x * (2 / (1 + Math.exp(-2 * u))) : 0.5 * x * (1 + Math.tanh(u));
    }
    double z = x / Math.sqrt(2);
    return z < 0 ? 0.5 * x * erfc(-z) : 0.5 * x * (1 + erf(z));
  }

  static Tensor binary(Tensor a, Tensor b, BinaryOp op) {
    int[] shape = OpShapes.broadcast(a.shape(), b.shape());
    Tensor av = a.expand(shape), bv = b.expand(shape);
    float[] out = new float[(int) Tensor.numel(shape)];
    int[] idx = new int[shape.length];
    for (int i = 0; i < out.length; i++) {
      unravel(i, shape, idx);
      float x = av.getFloat(idx), y = bv.getFloat(idx);
      out[i] =
          switch (op) {
            case ADD -> x + y;
            case SUB -> x - y;
            case MUL -> x * y;
            case DIV -> x / y;
            case MAX -> Math.max(x, y);
            case MIN -> Math.min(x, y);
          };
    }
    return Tensor.of(out, shape);
  }

  static Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    int[] shape = x.shape();
    float[] out = new float[(int) x.numel()];
    int[] idx = new int[4];
    for (int i = 0; i < out.length; i++) {
      unravel(i, shape, idx);
      int pair = idx[3] / 2;
      float c = cos.getFloat(idx[1], pair), s = sin.getFloat(idx[1], pair);
      int[] re = {idx[0], idx[1], idx[2], pair * 2};
      int[] im = {idx[0], idx[1], idx[2], pair * 2 + 1};
      float a = x.getFloat(re), b = x.getFloat(im);
      out[i] = idx[3] % 2 == 0 ? a * c - b * s : a * s + b * c;
    }
    return Tensor.of(out, shape);
  }

  static Tensor concat(List<Tensor> parts, int dim) {
    int a = parts.get(0).axis(dim);
    int[] shape = parts.get(0).shape();
    shape[a] = parts.stream().mapToInt(p -> p.dim(a)).sum();
    float[] out = new float[(int) Tensor.numel(shape)];
    int[] idx = new int[shape.length];
    for (int i = 0; i < out.length; i++) {
      unravel(i, shape, idx);
      int[] j = idx.clone();
      for (Tensor p : parts) {
        if (j[a] < p.dim(a)) {
          out[i] = p.getFloat(j);
          break;
        }
        j[a] -= p.dim(a);
      }
    }
    return Tensor.of(out, shape);
  }

  static Tensor pad(Tensor x, int[] pads, float value) {
    int[] shape = x.shape();
    int[] before = new int[shape.length];
    for (int p = 0; p < pads.length / 2; p++) {
      int d = shape.length - 1 - p;
      before[d] = pads[2 * p];
      shape[d] += pads[2 * p] + pads[2 * p + 1];
    }
    float[] out = new float[(int) Tensor.numel(shape)];
    int[] idx = new int[shape.length];
    for (int i = 0; i < out.length; i++) {
      unravel(i, shape, idx);
      boolean inside = true;
      for (int d = 0; d < shape.length; d++) {
        idx[d] -= before[d];
        inside &= idx[d] >= 0 && idx[d] < x.dim(d);
      }
      out[i] = inside ? x.getFloat(idx) : value;
    }
    return Tensor.of(out, shape);
  }

  static Tensor upsampleNearest2d(Tensor x, int sh, int sw) {
    int[] shape = x.shape();
    int r = shape.length;
    shape[r - 2] *= sh;
    shape[r - 1] *= sw;
    float[] out = new float[(int) Tensor.numel(shape)];
    int[] idx = new int[r];
    for (int i = 0; i < out.length; i++) {
      unravel(i, shape, idx);
      idx[r - 2] /= sh;
      idx[r - 1] /= sw;
      out[i] = x.getFloat(idx);
    }
    return Tensor.of(out, shape);
  }
}
