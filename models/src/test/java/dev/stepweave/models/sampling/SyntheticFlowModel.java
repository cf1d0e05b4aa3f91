package dev.stepweave.models.sampling;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * The fixed stand-in for a network that the scheduler recordings use: {@code tanh(0.7·x + 0.001·t)
 * − 0.1·x}.
 */
final class SyntheticFlowModel {
  private SyntheticFlowModel() {}

  static Tensor predict(Backend backend, Tensor sample, float timestep) {
    Tensor inner = backend.affine(sample, 0.7f, 0.001f * timestep);
    return backend.sub(
        backend.unary(inner, Backend.UnaryOp.TANH), backend.affine(sample, 0.1f, 0f));
  }
}
