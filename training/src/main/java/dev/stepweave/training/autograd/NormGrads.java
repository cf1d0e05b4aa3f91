package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * Backward rules of the normalisations and softmax, in the forward backend's operations: row
 * statistics are recomputed from the saved input, so nothing but the input is kept between the
 * forward and the backward. The L2 normalisation along any dimension (CLIP's) runs on the host.
 */
final class NormGrads {
  private NormGrads() {}

  /**
   * LayerNorm over the last dimension: with x̂ = (x − μ)·r and ĝ = g·w, {@code dx = r·(ĝ − mean(ĝ)
   * − x̂·mean(ĝ·x̂))}, {@code dw = Σ g·x̂}, {@code db = Σ g} (sums over the rows).
   */
  static BackwardRule layerNorm(Backend device, Tensor x, Tensor weight, Tensor bias, float eps) {
    return (g, wanted) -> {
      int n = x.dim(-1);
      Tensor centred = device.sub(x, mean(device, x, n));
      Tensor r = rsqrt(device, mean(device, device.unary(centred, UnaryOp.SQUARE), n), eps);
      Tensor xhat = device.mul(centred, r);
      List<Contribution> out = new ArrayList<>(3);
      if (wanted.test(x)) {
        Tensor gh = weight == null ? g : device.mul(g, weight);
        Tensor inner =
            device.sub(
                device.sub(gh, mean(device, gh, n)),
                device.mul(xhat, mean(device, device.mul(gh, xhat), n)));
        out.add(new Contribution(x, device.mul(inner, r)));
      }
      if (weight != null && wanted.test(weight)) {
        out.add(new Contribution(weight, columnSums(device, device.mul(g, xhat), n)));
      }
      if (bias != null && wanted.test(bias)) {
        out.add(new Contribution(bias, columnSums(device, g, n)));
      }
      return out;
    };
  }

  /**
   * RMSNorm over the last dimension: with r = 1/√(mean(x²) + eps) and ĝ = g·w, {@code dx = r·ĝ −
   * x·r³·mean(ĝ·x)}, {@code dw = Σ g·x·r}.
   */
  static BackwardRule rmsNorm(Backend device, Tensor x, Tensor weight, float eps) {
    return (g, wanted) -> {
      int n = x.dim(-1);
      Tensor r = rsqrt(device, mean(device, device.unary(x, UnaryOp.SQUARE), n), eps);
      List<Contribution> out = new ArrayList<>(2);
      if (wanted.test(x)) {
        Tensor gh = weight == null ? g : device.mul(g, weight);
        Tensor cubed = device.mul(device.unary(r, UnaryOp.SQUARE), r);
        Tensor along = device.mul(x, device.mul(cubed, mean(device, device.mul(gh, x), n)));
        out.add(new Contribution(x, device.sub(device.mul(gh, r), along)));
      }
      if (weight != null && wanted.test(weight)) {
        out.add(new Contribution(weight, columnSums(device, device.mul(g, device.mul(x, r)), n)));
      }
      return out;
    };
  }

  /**
   * The fused norm and rotation: the rotation's rule (it reads only the tables) chained into the
   * norm's (it reads only the input), so nothing of the forward is recomputed.
   */
  static BackwardRule rmsNormRope(
      Backend device, Tensor x, Tensor weight, float eps, Tensor cos, Tensor sin) {
    BackwardRule norm = rmsNorm(device, x, weight, eps);
    return (g, wanted) -> {
      if (wanted.test(cos) || wanted.test(sin)) {
        throw new UnsupportedOperationException("rope's cos/sin tables take no gradient");
      }
      return norm.apply(ElementwiseGrads.unrotated(device, g, cos, sin).reshape(x.shape()), wanted);
    };
  }

  /** The mean of each row of {@code t} (last dimension {@code n}), as {@code [..., 1]}. */
  private static Tensor mean(Backend device, Tensor t, int n) {
    return device.affine(device.sumLastDim(t), 1f / n, 0f);
  }

  /** {@code 1/√(v + eps)}. */
  private static Tensor rsqrt(Backend device, Tensor v, float eps) {
    return device.unary(device.affine(v, 1f, eps), UnaryOp.RSQRT);
  }

  /** The sum over every row of {@code t} (last dimension {@code n}): {@code [n]}. */
  private static Tensor columnSums(Backend device, Tensor t, int n) {
    return MiddleSums.of(device, t, 1, (int) (t.numel() / n), n).reshape(n);
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
    return (g, wanted) -> {
      if (!wanted.test(x)) {
        return List.of();
      }
      Tensor dot = device.sumLastDim(device.mul(g, y));
      return List.of(new Contribution(x, device.mul(y, device.sub(g, dot))));
    };
  }
}
