package dev.stepweave.training.data;

import dev.stepweave.tensor.Tensor;

/**
 * One prepared training sample, on the CPU in F32.
 *
 * @param latents the VAE posterior's mean, normalised with the VAE's latent statistics, {@code [z,
 *     F', H', W']} — what the denoiser learns to produce
 * @param promptEmbeds the caption's text-encoder output, cut to its length and zero-padded to the
 *     index's {@code max_sequence_length}, {@code [L, D]} — exactly what the serving text encoding
 *     hands the denoiser
 */
public record LatentSample(String id, String caption, Tensor latents, Tensor promptEmbeds) {}
