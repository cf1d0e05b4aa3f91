package dev.stepweave.training.optim;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Clipping by the global norm, as {@code torch.nn.utils.clip_grad_norm_}: the L2 norm over every
 * gradient together, and when it exceeds {@code maxNorm} every gradient scaled by {@code maxNorm /
 * (norm + 1e-6)}. Host gradients are summed and scaled in double (the bits every CPU run has
 * recorded); a device's gradients stay there — each tensor's sum of squares is an F32 reduction of
 * its backend, and only those sums, one download for all, come to the host.
 */
public final class GradientClipping {
  private GradientClipping() {}

  /** The clipped gradients and the norm they had before. */
  public record Clipped(Map<String, Tensor> gradients, double totalNorm) {}

  /** The L2 norm over every gradient together; {@code backend} holds those not on the host. */
  public static double globalNorm(Map<String, Tensor> gradients, Backend backend) {
    double squares = 0;
    List<Tensor> onDevice = new ArrayList<>();
    for (Tensor g : gradients.values()) {
      if (onHost(g)) {
        for (float v : g.toFloatArray()) {
          squares += (double) v * v;
        }
      } else {
        // Scoped: g² dies as soon as it is summed, not with the optimiser's step (on a GPU the
        // squares of every gradient together are a model's size).
        onDevice.add(backend.scoped(() -> sumOfSquares(backend, g)));
      }
    }
    if (!onDevice.isEmpty()) {
      for (float s : backend.download(backend.concat(onDevice, 0)).toFloatArray()) {
        squares += s;
      }
    }
    return Math.sqrt(squares);
  }

  public static Clipped byGlobalNorm(
      Map<String, Tensor> gradients, double maxNorm, Backend backend) {
    if (!(maxNorm > 0)) {
      throw new IllegalArgumentException("max gradient norm must be > 0, not " + maxNorm);
    }
    double norm = globalNorm(gradients, backend);
    double coefficient = Math.min(1, maxNorm / (norm + 1e-6));
    Map<String, Tensor> out = new LinkedHashMap<>();
    gradients.forEach(
        (name, g) -> {
          if (onHost(g)) {
            float[] v = g.toFloatArray();
            for (int i = 0; i < v.length; i++) {
              v[i] = (float) (v[i] * coefficient);
            }
            out.put(name, Tensor.of(v, g.shape()));
          } else {
            out.put(name, coefficient == 1 ? g : backend.affine(g, (float) coefficient, 0f));
          }
        });
    return new Clipped(out, norm);
  }

  private static boolean onHost(Tensor t) {
    return t.device().kind() == Device.Kind.CPU;
  }

  /**
   * Σ g² as a {@code [1]} tensor of {@code backend}: over each row of g's first dimension, then
   * over the rows, so that no one reduction runs over a whole large weight.
   */
  private static Tensor sumOfSquares(Backend backend, Tensor g) {
    int rows = g.rank() >= 2 ? g.dim(0) : 1;
    int columns = Math.toIntExact(g.numel() / rows);
    Tensor perRow = backend.sumLastDim(backend.mul(g, g).reshape(rows, columns));
    return backend.sumLastDim(perRow.reshape(1, rows)).reshape(1);
  }
}
