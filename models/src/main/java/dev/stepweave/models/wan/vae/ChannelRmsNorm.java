package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * RMS norm across channels of {@code [B, C, T, H, W]}: {@code x / ‖x‖₂ · √C · γ} at every position,
 * i.e. an L2 normalisation over dim 1 rescaled to unit RMS.
 */
final class ChannelRmsNorm {
  private static final float EPS = 1e-12f;

  private final Backend backend;
  private final Tensor scaledGamma;

  private ChannelRmsNorm(Backend backend, Tensor scaledGamma) {
    this.backend = backend;
    this.scaledGamma = scaledGamma;
  }

  /**
   * Loads {@code gamma}, stored as {@code [C, 1, 1, 1]} by video blocks and {@code [C, 1, 1]} by
   * the per-frame attention block ({@code perFrame}).
   */
  static ChannelRmsNorm load(Weights weights, int channels, boolean perFrame) {
    Backend backend = weights.backend();
    Tensor gamma =
        perFrame
            ? weights.take("gamma", channels, 1, 1).unsqueeze(-1)
            : weights.take("gamma", channels, 1, 1, 1);
    return new ChannelRmsNorm(backend, backend.affine(gamma, (float) Math.sqrt(channels), 0f));
  }

  Tensor apply(Tensor x) {
    return backend.channelNorm(x, scaledGamma, EPS, false);
  }

  /** {@code silu(apply(x))}, in one pass where the backend fuses it. */
  Tensor applySilu(Tensor x) {
    return backend.channelNorm(x, scaledGamma, EPS, true);
  }

  /** {@code past} then {@link #applySilu}'s frames of x, along time, in one tensor. */
  Tensor applySiluAfter(Tensor past, Tensor x) {
    return backend.channelNormAfter(past, x, scaledGamma, EPS, true);
  }
}
