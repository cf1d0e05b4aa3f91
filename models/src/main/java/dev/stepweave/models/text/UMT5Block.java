package dev.stepweave.models.text;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * One encoder layer, pre-norm with residuals: {@code x + attn(norm(x))}, then {@code x +
 * ff(norm(x))}. The norms are T5's RMS norm (scale only, no mean subtraction, no bias).
 */
final class UMT5Block {
  private final Backend backend;
  private final float eps;
  private final Tensor attentionNorm;
  private final UMT5Attention attention;
  private final Tensor feedForwardNorm;
  private final UMT5FeedForward feedForward;

  private UMT5Block(
      Backend backend,
      float eps,
      Tensor attentionNorm,
      UMT5Attention attention,
      Tensor feedForwardNorm,
      UMT5FeedForward feedForward) {
    this.backend = backend;
    this.eps = eps;
    this.attentionNorm = attentionNorm;
    this.attention = attention;
    this.feedForwardNorm = feedForwardNorm;
    this.feedForward = feedForward;
  }

  /** Loads {@code layer.0} (self-attention) and {@code layer.1} (feed-forward) from {@code w}. */
  static UMT5Block load(UMT5Config config, Weights w) {
    Weights selfAttention = w.scope("layer.0");
    Weights ff = w.scope("layer.1");
    return new UMT5Block(
        w.backend(),
        config.layerNormEpsilon(),
        selfAttention.take("layer_norm.weight", config.dModel()),
        UMT5Attention.load(config, selfAttention.scope("SelfAttention")),
        ff.take("layer_norm.weight", config.dModel()),
        UMT5FeedForward.load(config, ff.scope("DenseReluDense")));
  }

  Tensor forward(Tensor x, Tensor buckets, Tensor maskBias) {
    Tensor attended = attention.forward(backend.rmsNorm(x, attentionNorm, eps), buckets, maskBias);
    Tensor h = backend.add(x, attended);
    return backend.add(h, feedForward.forward(backend.rmsNorm(h, feedForwardNorm, eps)));
  }
}
