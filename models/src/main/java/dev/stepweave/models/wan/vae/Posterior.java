package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;

/**
 * The encoder's diagonal Gaussian over latents, raw (before latents_mean/std normalisation).
 *
 * @param mean {@code [B, z_dim, T', H', W']}
 * @param logvar same shape, clamped to {@code [-30, 20]} as the reference does
 */
public record Posterior(Tensor mean, Tensor logvar) {}
