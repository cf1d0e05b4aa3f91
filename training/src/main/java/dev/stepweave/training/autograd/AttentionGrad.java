package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The backward of scaled dot-product attention, tiled as FlashAttention-2's: per (batch, head) and
 * query tile, one pass over the key tiles recomputes each row's log-sum-exp, a second recomputes
 * the probabilities tile by tile and accumulates {@code dV += Pᵀ·dO}, {@code dS = P·(dO·Vᵀ − D)} (D
 * = rowsum(dO·O)), {@code dQ += scale·dS·K} and {@code dK += scale·dSᵀ·Q}. Memory beyond the
 * gradients themselves is one tile, never an Lq×Lk matrix, whatever the sequence length — except
 * for a bias that itself takes a gradient, whose gradient has the bias's broadcast shape.
 */
final class AttentionGrad {
  static final int TILE = 64;

  private AttentionGrad() {}

  static BackwardRule of(Tensor q, Tensor k, Tensor v, Tensor bias, float scale, Tensor out) {
    return (gradOut, wanted) -> {
      int batch = q.dim(0);
      int lq = q.dim(1);
      int heads = q.dim(2);
      int d = q.dim(3);
      int lk = k.dim(1);
      int dv = v.dim(3);
      float[] qv = q.toFloatArray();
      float[] kv = k.toFloatArray();
      float[] vv = v.toFloatArray();
      float[] ov = out.toFloatArray();
      BiasView biasView = bias == null ? null : new BiasView(bias, batch, heads, lq, lk);
      boolean wantBias = bias != null && wanted.test(bias);
      double[] dq = new double[qv.length];
      double[] dk = new double[kv.length];
      double[] dvv = new double[vv.length];
      float[] dBias = wantBias ? new float[batch * heads * lq * lk] : null;
      IntStream.range(0, batch * heads)
          .parallel()
          .forEach(
              bh -> {
                int b = bh / heads;
                int h = bh % heads;
                double[] lse = new double[TILE];
                double[] rowDot = new double[TILE];
                double[] p = new double[TILE * TILE];
                for (int i0 = 0; i0 < lq; i0 += TILE) {
                  int ti = Math.min(TILE, lq - i0);
                  for (int i = 0; i < ti; i++) {
                    int qi = ((b * lq + i0 + i) * heads + h);
                    double max = Double.NEGATIVE_INFINITY;
                    for (int j = 0; j < lk; j++) {
                      max =
                          Math.max(
                              max,
                              logit(
                                  qv,
                                  kv,
                                  qi * d,
                                  ((b * lk + j) * heads + h) * d,
                                  d,
                                  scale,
                                  biasView,
                                  b,
                                  h,
                                  i0 + i,
                                  j));
                    }
                    double sum = 0;
                    for (int j = 0; j < lk; j++) {
                      sum +=
                          Math.exp(
                              logit(
                                      qv,
                                      kv,
                                      qi * d,
                                      ((b * lk + j) * heads + h) * d,
                                      d,
                                      scale,
                                      biasView,
                                      b,
                                      h,
                                      i0 + i,
                                      j)
                                  - max);
                    }
                    lse[i] = max + Math.log(sum);
                    double dot = 0;
                    for (int c = 0; c < dv; c++) {
                      dot += (double) gradOut[qi * dv + c] * ov[qi * dv + c];
                    }
                    rowDot[i] = dot;
                  }
                  for (int j0 = 0; j0 < lk; j0 += TILE) {
                    int tj = Math.min(TILE, lk - j0);
                    for (int i = 0; i < ti; i++) {
                      int qi = ((b * lq + i0 + i) * heads + h);
                      for (int j = 0; j < tj; j++) {
                        int kj = ((b * lk + j0 + j) * heads + h);
                        p[i * TILE + j] =
                            Math.exp(
                                logit(
                                        qv, kv, qi * d, kj * d, d, scale, biasView, b, h, i0 + i,
                                        j0 + j)
                                    - lse[i]);
                      }
                    }
                    for (int i = 0; i < ti; i++) {
                      int qi = ((b * lq + i0 + i) * heads + h);
                      for (int j = 0; j < tj; j++) {
                        int kj = ((b * lk + j0 + j) * heads + h);
                        double pij = p[i * TILE + j];
                        double dp = 0;
                        for (int c = 0; c < dv; c++) {
                          double go = gradOut[qi * dv + c];
                          dvv[kj * dv + c] += pij * go;
                          dp += go * vv[kj * dv + c];
                        }
                        double ds = pij * (dp - rowDot[i]);
                        if (dBias != null) {
                          dBias[((b * heads + h) * lq + i0 + i) * lk + j0 + j] = (float) ds;
                        }
                        double sds = scale * ds;
                        for (int c = 0; c < d; c++) {
                          dq[qi * d + c] += sds * kv[kj * d + c];
                          dk[kj * d + c] += sds * qv[qi * d + c];
                        }
                      }
                    }
                  }
                }
              });
      List<Contribution> list = new ArrayList<>(4);
      if (wanted.test(q)) {
        list.add(new Contribution(q, Host.floats(dq)));
      }
      if (wanted.test(k)) {
        list.add(new Contribution(k, Host.floats(dk)));
      }
      if (wanted.test(v)) {
        list.add(new Contribution(v, Host.floats(dvv)));
      }
      if (wantBias) {
        list.add(new Contribution(bias.expand(batch, heads, lq, lk), dBias));
      }
      return list;
    };
  }

  private static double logit(
      float[] q,
      float[] k,
      int qAt,
      int kAt,
      int d,
      float scale,
      BiasView bias,
      int b,
      int h,
      int i,
      int j) {
    double s = 0;
    for (int c = 0; c < d; c++) {
      s += (double) q[qAt + c] * k[kAt + c];
    }
    s *= scale;
    return bias == null ? s : s + bias.at(b, h, i, j);
  }

  /** An additive bias read through its broadcast to {@code [B, H, Lq, Lk]} without copying it. */
  private static final class BiasView {
    private final float[] values;
    private final long[] strides = new long[4];

    BiasView(Tensor bias, int batch, int heads, int lq, int lk) {
      this.values = bias.toFloatArray();
      int[] shape = bias.shape();
      long acc = 1;
      for (int d = 3; d >= 0; d--) {
        int src = d - (4 - shape.length);
        int size = src < 0 ? 1 : shape[src];
        strides[d] = size == 1 ? 0 : acc;
        acc *= size;
      }
      if (bias.rank() > 4) {
        throw new IllegalArgumentException("attention bias of rank " + bias.rank());
      }
    }

    double at(int b, int h, int i, int j) {
      return values[(int) (b * strides[0] + h * strides[1] + i * strides[2] + j * strides[3])];
    }
  }
}
