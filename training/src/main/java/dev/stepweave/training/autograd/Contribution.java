package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * A gradient to add to {@code target}, a view of some tensor's storage: {@code grad} has the view's
 * shape, on either side of the host/device line ({@link Gradients} moves it). Elements that the
 * view maps to one storage element (a broadcast by stride 0) are summed, which is exactly the
 * backward of the broadcast.
 */
record Contribution(Tensor target, Tensor grad) {
  Contribution {
    if (!Arrays.equals(grad.shape(), target.shape())) {
      throw new IllegalArgumentException(
          "a gradient of shape "
              + Arrays.toString(grad.shape())
              + " for a view of shape "
              + Arrays.toString(target.shape()));
    }
  }

  /** A gradient computed on the host: {@code values[i]} belongs to the view's element i. */
  Contribution(Tensor target, float[] values) {
    this(target, hostTensor(values, target));
  }

  private static Tensor hostTensor(float[] values, Tensor target) {
    if (values.length != target.numel()) {
      throw new IllegalArgumentException(
          values.length + " gradient values for a view of " + target.numel() + " elements");
    }
    return Tensor.of(values, target.shape());
  }
}
