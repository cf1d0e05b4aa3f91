package dev.stepweave.training.optim;

import dev.stepweave.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Clipping by the global norm, as {@code torch.nn.utils.clip_grad_norm_}: the L2 norm over every
 * gradient together, and when it exceeds {@code maxNorm} every gradient scaled by {@code maxNorm /
 * (norm + 1e-6)}.
 */
public final class GradientClipping {
  private GradientClipping() {}

  /** The clipped gradients and the norm they had before. */
  public record Clipped(Map<String, Tensor> gradients, double totalNorm) {}

  /** The L2 norm over every gradient together. */
  public static double globalNorm(Map<String, Tensor> gradients) {
    double squares = 0;
    for (Tensor g : gradients.values()) {
      for (float v : g.toFloatArray()) {
        squares += (double) v * v;
      }
    }
    return Math.sqrt(squares);
  }

  public static Clipped byGlobalNorm(Map<String, Tensor> gradients, double maxNorm) {
    if (!(maxNorm > 0)) {
      throw new IllegalArgumentException("max gradient norm must be > 0, not " + maxNorm);
    }
    double norm = globalNorm(gradients);
    double coefficient = Math.min(1, maxNorm / (norm + 1e-6));
    Map<String, Tensor> out = new LinkedHashMap<>();
    gradients.forEach(
        (name, g) -> {
          float[] v = g.toFloatArray();
          for (int i = 0; i < v.length; i++) {
            v[i] = (float) (v[i] * coefficient);
          }
          out.put(name, Tensor.of(v, g.shape()));
        });
    return new Clipped(out, norm);
  }
}
