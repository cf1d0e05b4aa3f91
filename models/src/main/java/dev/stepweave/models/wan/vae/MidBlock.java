package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/** The bottleneck of encoder and decoder: residual block, per-frame attention, residual block. */
final class MidBlock implements CausalLayer {
  private final ResidualBlock first;
  private final AttentionBlock attention;
  private final ResidualBlock second;

  private MidBlock(ResidualBlock first, AttentionBlock attention, ResidualBlock second) {
    this.first = first;
    this.attention = attention;
    this.second = second;
  }

  static MidBlock load(
      Weights weights, int channels, CacheSlots slots, ConvolutionPrecision precision) {
    return new MidBlock(
        ResidualBlock.load(weights.scope("resnets.0"), channels, channels, slots, precision),
        AttentionBlock.load(weights.scope("attentions.0"), channels),
        ResidualBlock.load(weights.scope("resnets.1"), channels, channels, slots, precision));
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    return second.apply(attention.apply(first.apply(x, cache), cache), cache);
  }
}
