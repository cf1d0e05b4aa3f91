package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
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

  /** LayerNorm over the last dimension ({@link Backend#layerNormBackward}). */
  static BackwardRule layerNorm(Backend device, Tensor x, Tensor weight, Tensor bias, float eps) {
    return (g, wanted) ->
        contributions(
            device.layerNormBackward(
                g,
                x,
                weight,
                bias,
                eps,
                wanted.test(x),
                weight != null && wanted.test(weight),
                bias != null && wanted.test(bias)),
            x,
            weight,
            bias);
  }

  /** RMSNorm over the last dimension ({@link Backend#rmsNormBackward}). */
  static BackwardRule rmsNorm(Backend device, Tensor x, Tensor weight, float eps) {
    return (g, wanted) ->
        contributions(
            device.rmsNormBackward(
                g, x, weight, eps, wanted.test(x), weight != null && wanted.test(weight)),
            x,
            weight,
            null);
  }

  /** A norm's gradients as contributions to those of its operands that were asked for. */
  private static List<Contribution> contributions(
      Backend.NormGradients grads, Tensor x, Tensor weight, Tensor bias) {
    List<Contribution> out = new ArrayList<>(3);
    if (grads.input() != null) {
      out.add(new Contribution(x, grads.input()));
    }
    if (grads.weight() != null) {
      out.add(new Contribution(weight, grads.weight()));
    }
    if (grads.bias() != null) {
      out.add(new Contribution(bias, grads.bias()));
    }
    return out;
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
