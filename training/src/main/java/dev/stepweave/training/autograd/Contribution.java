package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Tensor;

/**
 * A gradient to add to {@code target}, a view of some tensor's storage: {@code grad[i]} belongs to
 * the view's element {@code i} in row-major order. Elements that the view maps to one storage
 * element (a broadcast by stride 0) are summed, which is exactly the backward of the broadcast.
 */
record Contribution(Tensor target, float[] grad) {
  Contribution {
    if (grad.length != target.numel()) {
      throw new IllegalArgumentException(
          grad.length + " gradient values for a view of " + target.numel() + " elements");
    }
  }
}
