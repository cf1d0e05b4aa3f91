package dev.stepweave.training.objective;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * The VAE's reconstruction objective: {@code mean|x̂ − x| + mean((x̂ − x)²)}, an L1 plus an L2 term
 * over every element, through the backend so a recording backend differentiates it.
 */
public final class Reconstruction {
  private Reconstruction() {}

  /** The loss as a {@code [1]} tensor. */
  public static Tensor l1PlusL2(Backend backend, Tensor reconstruction, Tensor target) {
    Tensor diff = backend.contiguous(backend.sub(reconstruction, target));
    int n = (int) diff.numel();
    Tensor flat = diff.reshape(1, n);
    Tensor l1 = backend.sumLastDim(backend.unary(flat, Backend.UnaryOp.ABS));
    Tensor l2 = backend.sumLastDim(backend.unary(flat, Backend.UnaryOp.SQUARE));
    float inv = (float) (1.0 / n);
    return backend.add(backend.affine(l1, inv, 0f), backend.affine(l2, inv, 0f)).reshape(1);
  }
}
