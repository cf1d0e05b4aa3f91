package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * {@code conv2(silu(norm2(conv1(silu(norm1(x)))))) + shortcut(x)}, the shortcut a 1×1×1 convolution
 * when the width changes. Dropout is inference-inert and absent.
 */
final class ResidualBlock implements CausalLayer {
  private final Backend backend;
  private final ChannelRmsNorm norm1;
  private final CausalConv3d conv1;
  private final ChannelRmsNorm norm2;
  private final CausalConv3d conv2;
  private final CausalConv3d shortcut;
  private final int slot1;
  private final int slot2;

  private ResidualBlock(
      Backend backend,
      ChannelRmsNorm norm1,
      CausalConv3d conv1,
      ChannelRmsNorm norm2,
      CausalConv3d conv2,
      CausalConv3d shortcut,
      int slot1,
      int slot2) {
    this.backend = backend;
    this.norm1 = norm1;
    this.conv1 = conv1;
    this.norm2 = norm2;
    this.conv2 = conv2;
    this.shortcut = shortcut;
    this.slot1 = slot1;
    this.slot2 = slot2;
  }

  static ResidualBlock load(
      Weights weights, int in, int out, CacheSlots slots, ConvolutionPrecision precision) {
    return new ResidualBlock(
        weights.backend(),
        ChannelRmsNorm.load(weights.scope("norm1"), in, false),
        CausalConv3d.cube(weights.scope("conv1"), in, out, 3, precision),
        ChannelRmsNorm.load(weights.scope("norm2"), out, false),
        CausalConv3d.cube(weights.scope("conv2"), out, out, 3, precision),
        in == out ? null : CausalConv3d.cube(weights.scope("conv_shortcut"), in, out, 1, precision),
        slots.allocate(),
        slots.allocate());
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    Tensor skip = shortcut == null ? x : shortcut.apply(x, null);
    // Both results as the convolutions write them (BF16 with BF16 operands): norm2 reads conv1's
    // as it is, and the sum with the skip (the stream's dtype) promotes conv2's, with no copy.
    Tensor inner = conv1.applyStreamingNormSiluAsWritten(norm1, x, cache, slot1);
    Tensor h = conv2.applyStreamingNormSiluAsWritten(norm2, inner, cache, slot2);
    // conv2 has read its normalised copy; at full resolution this is one of the peak's largest.
    cache.discard(inner);
    return backend.add(h, skip);
  }
}
