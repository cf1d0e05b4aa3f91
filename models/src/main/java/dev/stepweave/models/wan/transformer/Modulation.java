package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * Adaptive-LayerNorm conditioning: a learned {@code scale_shift_table [1, n, dim]} plus a
 * per-sample (or, for per-token timesteps, per-token) embedding gives n vectors (shift, scale,
 * gate, …) that modulate normalised activations ({@link Backend#modulatedLayerNorm}, {@link
 * Backend#gatedResidual}). As in diffusers they stay F32: the embedding is F32, and adding it
 * promotes a BF16 table.
 */
final class Modulation {
  private Modulation() {}

  /**
   * The n modulation vectors, each {@code [B, T, dim]}: T = 1 broadcasts one vector per sample over
   * the sequence, T = L gives every token its own.
   *
   * @param table {@code [1, n, dim]}
   * @param embedding {@code [B, T, n, dim]}, or {@code [B, T, 1, dim]} (one embedding for all n)
   */
  static Tensor[] vectors(Backend backend, Tensor table, Tensor embedding) {
    Tensor sum = backend.add(table, embedding);
    Tensor[] out = new Tensor[sum.dim(2)];
    for (int i = 0; i < out.length; i++) {
      out[i] = sum.select(2, i);
    }
    return out;
  }
}
