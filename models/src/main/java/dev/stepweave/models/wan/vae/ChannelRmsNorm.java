package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
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

  /** The norm of {@code x} in x's dtype. */
  Tensor apply(Tensor x) {
    return backend.channelNorm(x, scaledGamma, EPS, false, x.dtype());
  }

  /** {@code silu(apply(x))} in {@code out} (a convolution's input dtype), in one pass. */
  Tensor applySilu(Tensor x, DType out) {
    return backend.channelNorm(x, scaledGamma, EPS, true, out);
  }

  /**
   * {@code past} then {@link #applySilu}'s frames of x, along time, in one tensor of {@code out}.
   */
  Tensor applySiluAfter(Tensor past, Tensor x, DType out) {
    return backend.channelNormAfter(past, x, scaledGamma, EPS, true, out);
  }
}
