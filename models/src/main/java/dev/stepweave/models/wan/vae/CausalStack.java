package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.List;

/**
 * The shape shared by encoder and decoder: a 3×3×3 input convolution, a sequence of stages, then
 * norm, SiLU and a 3×3×3 output convolution — run one temporal chunk at a time against a {@link
 * CausalCache} of {@link #cacheSlots()} slots.
 */
final class CausalStack {
  private final Backend backend;
  private final CausalConv3d convIn;
  private final int convInSlot;
  private final List<CausalLayer> stages;
  private final ChannelRmsNorm normOut;
  private final CausalConv3d convOut;
  private final int convOutSlot;
  private final int cacheSlots;

  private CausalStack(
      Backend backend,
      CausalConv3d convIn,
      int convInSlot,
      List<CausalLayer> stages,
      ChannelRmsNorm normOut,
      CausalConv3d convOut,
      int convOutSlot,
      int cacheSlots) {
    this.backend = backend;
    this.convIn = convIn;
    this.convInSlot = convInSlot;
    this.stages = List.copyOf(stages);
    this.normOut = normOut;
    this.convOut = convOut;
    this.convOutSlot = convOutSlot;
    this.cacheSlots = cacheSlots;
  }

  /** Builds the stack's stages between the input and output convolutions. */
  interface StageLoader {
    List<CausalLayer> load(CacheSlots slots);
  }

  /**
   * Loads {@code conv_in}, the stages, {@code norm_out} and {@code conv_out} from {@code weights}
   * (the encoder's or decoder's scope).
   */
  static CausalStack load(
      Weights weights,
      int in,
      int first,
      StageLoader stages,
      int last,
      int out,
      ConvolutionPrecision precision) {
    CacheSlots slots = new CacheSlots();
    CausalConv3d convIn = CausalConv3d.cube(weights.scope("conv_in"), in, first, 3, precision);
    int convInSlot = slots.allocate();
    List<CausalLayer> body = stages.load(slots);
    ChannelRmsNorm normOut = ChannelRmsNorm.load(weights.scope("norm_out"), last, false);
    CausalConv3d convOut = CausalConv3d.cube(weights.scope("conv_out"), last, out, 3, precision);
    int convOutSlot = slots.allocate();
    return new CausalStack(
        weights.backend(), convIn, convInSlot, body, normOut, convOut, convOutSlot, slots.count());
  }

  int cacheSlots() {
    return cacheSlots;
  }

  /** Runs one temporal chunk, updating {@code cache}. */
  Tensor apply(Tensor chunk, CausalCache cache) {
    return layers(chunk, cache, 0, stages.size() + 2);
  }

  /** The first part of {@link #apply}: {@code conv_in} and the stages before {@code split}. */
  Tensor applyFront(Tensor chunk, CausalCache cache, int split) {
    return layers(chunk, cache, 0, 1 + split);
  }

  /**
   * The rest of {@link #apply} after {@link #applyFront}: the stages from {@code split} on, norm,
   * SiLU and {@code conv_out}. The two parts touch disjoint cache slots, so each may keep its own
   * cache.
   */
  Tensor applyBack(Tensor x, CausalCache cache, int split) {
    return layers(x, cache, 1 + split, stages.size() + 2);
  }

  /**
   * Layers {@code from} to {@code to - 1} (0 is {@code conv_in}, then the stages, then the output
   * layer) one after another, each layer's temporaries and the previous layer's output released
   * once it has returned; the cache's new frames survive.
   */
  private Tensor layers(Tensor x, CausalCache cache, int from, int to) {
    return backend.chain(x, from, to, (i, h) -> layer(i, h, cache), cache::remembered);
  }

  private Tensor layer(int index, Tensor x, CausalCache cache) {
    if (index == 0) {
      return convIn.applyStreaming(x, cache, convInSlot);
    }
    if (index <= stages.size()) {
      return stages.get(index - 1).apply(x, cache);
    }
    return convOut.applyStreamingNormSilu(normOut, x, cache, convOutSlot);
  }
}
