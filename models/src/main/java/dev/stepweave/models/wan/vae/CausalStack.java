package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/**
 * The shape shared by encoder and decoder: a 3×3×3 input convolution, a sequence of stages, then
 * norm, SiLU and a 3×3×3 output convolution — run one temporal chunk at a time against a {@link
 * CausalCache} of {@link #cacheSlots()} slots.
 *
 * <p>The layers after the last one that changes the frame count map frames one to one, causally, so
 * they take a chunk's frames {@value #FRAME_LOCAL_RUN} at a time: in the decoder these are the
 * full-resolution stages, whose activations of a four-frame chunk would otherwise all be live at
 * once (each frame's result is the same; only the live memory is smaller).
 */
final class CausalStack {
  /** Frames per run through the frame-local layers. */
  static final int FRAME_LOCAL_RUN = 2;

  private final Backend backend;
  private final CausalConv3d convIn;
  private final int convInSlot;
  private final List<CausalLayer> stages;
  private final ChannelRmsNorm normOut;
  private final CausalConv3d convOut;
  private final int convOutSlot;
  private final int cacheSlots;
  private final int frameLocalFrom;

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
    int last = 0; // conv_in keeps the frame count
    for (int i = 0; i < this.stages.size(); i++) {
      if (this.stages.get(i).changesFrameCount()) {
        last = i + 1;
      }
    }
    this.frameLocalFrom = last + 1;
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
      Weights weights, int in, int first, StageLoader stages, int last, int out) {
    CacheSlots slots = new CacheSlots();
    CausalConv3d convIn = CausalConv3d.cube(weights.scope("conv_in"), in, first, 3);
    int convInSlot = slots.allocate();
    List<CausalLayer> body = stages.load(slots);
    ChannelRmsNorm normOut = ChannelRmsNorm.load(weights.scope("norm_out"), last, false);
    CausalConv3d convOut = CausalConv3d.cube(weights.scope("conv_out"), last, out, 3);
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
   * once it has returned; the cache's new frames survive. The frame-local layers among them run as
   * one last step of the chain, a few frames at a time.
   */
  private Tensor layers(Tensor x, CausalCache cache, int from, int to) {
    int split = Math.clamp(frameLocalFrom, from, to);
    if (split == to) {
      return chain(x, cache, from, to);
    }
    return backend.chain(
        x,
        from,
        split + 1,
        (i, h) -> i < split ? layer(i, h, cache) : frameLocal(h, cache, split, to),
        cache::remembered);
  }

  private Tensor chain(Tensor x, CausalCache cache, int from, int to) {
    return backend.chain(x, from, to, (i, h) -> layer(i, h, cache), cache::remembered);
  }

  /** Frame-local layers {@code from} to {@code to - 1} over {@code x}'s frames, a few at a time. */
  private Tensor frameLocal(Tensor x, CausalCache cache, int from, int to) {
    int frames = Frames.count(x);
    if (frames <= FRAME_LOCAL_RUN) {
      return chain(x, cache, from, to);
    }
    List<Tensor> runs = new ArrayList<>();
    for (int f = 0; f < frames; f += FRAME_LOCAL_RUN) {
      runs.add(chain(x.slice(2, f, Math.min(frames, f + FRAME_LOCAL_RUN)), cache, from, to));
    }
    return Frames.concat(backend, runs);
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
