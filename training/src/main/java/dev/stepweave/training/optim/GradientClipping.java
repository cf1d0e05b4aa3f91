package dev.stepweave.training.optim;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Clipping by the global norm, as {@code torch.nn.utils.clip_grad_norm_}: the L2 norm over every
 * gradient together, and when it exceeds {@code maxNorm} every gradient scaled by {@code maxNorm /
 * (norm + 1e-6)}. Host gradients are summed and scaled in double (the bits every CPU run has
 * recorded); a device's gradients stay there — their sums of squares are F32 results of its backend
 * ({@link Backend#sumsOfSquares}, one download for the step), and the scaling is folded into
 * AdamW's step ({@link AdamW#step(Map, Map, double, double)}) rather than a pass of its own.
 */
public final class GradientClipping {
  private GradientClipping() {}

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
        onDevice.add(g);
      }
    }
    if (!onDevice.isEmpty()) {
      for (float s : backend.download(backend.sumsOfSquares(onDevice)).toFloatArray()) {
        squares += s;
      }
    }
    return Math.sqrt(squares);
  }

  /**
   * What every gradient is multiplied by when their global norm is {@code norm}: {@code maxNorm /
   * (norm + 1e-6)} where that is below 1, else 1.
   */
  public static double coefficient(double norm, double maxNorm) {
    if (!(maxNorm > 0)) {
      throw new IllegalArgumentException("max gradient norm must be > 0, not " + maxNorm);
    }
    return Math.min(1, maxNorm / (norm + 1e-6));
  }

  /** A host gradient multiplied by {@code coefficient} in double, each element rounded once. */
  static Tensor scaledOnHost(Tensor g, double coefficient) {
    float[] v = g.toFloatArray();
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (v[i] * coefficient);
    }
    return Tensor.of(v, g.shape());
  }

  static boolean onHost(Tensor t) {
    return t.device().kind() == Device.Kind.CPU;
  }
}
