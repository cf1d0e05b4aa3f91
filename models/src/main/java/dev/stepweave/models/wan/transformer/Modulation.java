package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * Adaptive-LayerNorm conditioning: a learned {@code scale_shift_table [1, n, dim]} plus a
 * per-sample embedding gives n vectors (shift, scale, gate, …) that modulate normalised activations
 * ({@link Backend#modulatedLayerNorm}, {@link Backend#gatedResidual}). As in diffusers they stay
 * F32: the embedding is F32, and adding it promotes a BF16 table.
 */
final class Modulation {
  private Modulation() {}

  /**
   * The n modulation vectors, each {@code [B, 1, dim]} so they broadcast over the sequence.
   *
   * @param table {@code [1, n, dim]}
   * @param embedding broadcastable to {@code [B, n, dim]}
   */
  static Tensor[] vectors(Backend backend, Tensor table, Tensor embedding) {
    Tensor sum = backend.add(table, embedding);
    Tensor[] out = new Tensor[sum.dim(1)];
    for (int i = 0; i < out.length; i++) {
      out[i] = sum.slice(1, i, i + 1);
    }
    return out;
  }
}
