package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * Single-head self-attention over the {@code H·W} positions of each frame separately (so it needs
 * no cache), with a residual connection. The reference's 1×1 2-D convolutions are linear maps over
 * channels, applied here to channels-last tokens.
 */
final class AttentionBlock implements CausalLayer {
  private final Backend backend;
  private final int channels;
  private final ChannelRmsNorm norm;
  private final Tensor qkvWeight;
  private final Tensor qkvBias;
  private final Tensor projWeight;
  private final Tensor projBias;

  private AttentionBlock(
      Backend backend,
      int channels,
      ChannelRmsNorm norm,
      Tensor qkvWeight,
      Tensor qkvBias,
      Tensor projWeight,
      Tensor projBias) {
    this.backend = backend;
    this.channels = channels;
    this.norm = norm;
    this.qkvWeight = qkvWeight;
    this.qkvBias = qkvBias;
    this.projWeight = projWeight;
    this.projBias = projBias;
  }

  static AttentionBlock load(Weights weights, int channels) {
    return new AttentionBlock(
        weights.backend(),
        channels,
        ChannelRmsNorm.load(weights.scope("norm"), channels, true),
        pointwise(weights.scope("to_qkv").take("weight", 3 * channels, channels, 1, 1)),
        weights.scope("to_qkv").take("bias", 3 * channels),
        pointwise(weights.scope("proj").take("weight", channels, channels, 1, 1)),
        weights.scope("proj").take("bias", channels));
  }

  /** {@code [out, in, 1, 1]} as the {@code [out, in]} matrix of a linear map. */
  private static Tensor pointwise(Tensor conv1x1) {
    return conv1x1.squeeze(3).squeeze(2);
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    int b = x.dim(0);
    int t = x.dim(2);
    int h = x.dim(3);
    int w = x.dim(4);
    Tensor tokens =
        backend.contiguous(norm.apply(x).permute(0, 2, 3, 4, 1)).reshape(b * t, h * w, channels);
    Tensor qkv = backend.linear(tokens, qkvWeight, qkvBias);
    Tensor q = qkv.slice(2, 0, channels).unsqueeze(2);
    Tensor k = qkv.slice(2, channels, 2 * channels).unsqueeze(2);
    Tensor v = qkv.slice(2, 2 * channels, 3 * channels).unsqueeze(2);
    Tensor attended = backend.attention(q, k, v, null, (float) (1.0 / Math.sqrt(channels)));
    Tensor out =
        backend.linear(
            backend.contiguous(attended).reshape(b * t, h * w, channels), projWeight, projBias);
    return backend.add(
        backend.contiguous(out).reshape(b, t, h, w, channels).permute(0, 4, 1, 2, 3), x);
  }
}
