package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.List;

/**
 * Doubles height and width (nearest neighbour, then a 3×3 convolution per frame to the output
 * width: half the input's in the Wan 2.1 decoder, the same in the residual one); the temporal
 * variant first doubles time with a causal convolution whose output channels hold two frames for
 * every input frame.
 */
final class Upsample implements CausalLayer {
  private static final int[] UNIT_STRIDE = {1, 1, 1};
  private static final int[] SAME_PADDING_2D = {0, 1, 1};

  private final Backend backend;
  private final Tensor spatialWeight;
  private final Tensor spatialBias;
  private final CausalConv3d timeConv;
  private final int slot;
  private final ConvolutionPrecision precision;

  private Upsample(
      Backend backend,
      Tensor spatialWeight,
      Tensor spatialBias,
      CausalConv3d timeConv,
      int slot,
      ConvolutionPrecision precision) {
    this.backend = backend;
    this.precision = precision;
    this.spatialWeight = spatialWeight;
    this.spatialBias = spatialBias;
    this.timeConv = timeConv;
    this.slot = slot;
  }

  /**
   * Loads {@code resample.1} ({@code channels → outChannels}) and, when temporal, {@code
   * time_conv}.
   */
  static Upsample load(
      Weights weights,
      int channels,
      int outChannels,
      boolean temporal,
      CacheSlots slots,
      ConvolutionPrecision precision) {
    Weights conv = weights.scope("resample.1");
    Tensor w = conv.take("weight", outChannels, channels, 3, 3).unsqueeze(2);
    Tensor b = conv.take("bias", outChannels);
    if (!temporal) {
      return new Upsample(weights.backend(), w, b, null, -1, precision);
    }
    CausalConv3d time =
        CausalConv3d.load(
            weights.scope("time_conv"),
            channels,
            2 * channels,
            new int[] {3, 1, 1},
            UNIT_STRIDE,
            new int[] {1, 0, 0},
            precision);
    return new Upsample(weights.backend(), w, b, time, slots.allocate(), precision);
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    Tensor y = timeConv == null ? x : doubleFrames(x, cache);
    // Converted before the doubling, which copies: a quarter of the values to convert.
    Tensor up = backend.upsampleNearest2d(precision.asInput(backend, y), 2, 2);
    return precision.convolve(
        backend, up, spatialWeight, spatialBias, UNIT_STRIDE, SAME_PADDING_2D, x.dtype());
  }

  /**
   * Whether this is a temporal upsampler that has not yet seen the first chunk of the call whose
   * cache is {@code cache}: the chunk it will let through without doubling time.
   */
  boolean awaitsFirstChunk(CausalCache cache) {
    return timeConv != null && !cache.firstChunkPassed(slot);
  }

  /**
   * The first chunk passes with its frame count unchanged and only marks the slot; from the second
   * chunk on, frames are doubled, the first time with zeros as the remembered past.
   */
  private Tensor doubleFrames(Tensor x, CausalCache cache) {
    if (!cache.firstChunkPassed(slot)) {
      cache.markFirstChunkPassed(slot);
      return x;
    }
    Tensor remembered = cache.tail(slot);
    Tensor keep =
        remembered == null && Frames.count(x) < Frames.CACHED
            ? Frames.kept(backend, Frames.concat(backend, List.of(Frames.zeros(backend, x, 1), x)))
            : Frames.tail(backend, x, remembered);
    Tensor pairs = backend.contiguous(timeConv.apply(x, remembered));
    cache.setTail(slot, keep);
    int b = x.dim(0);
    int c = x.dim(1);
    int t = x.dim(2);
    int h = x.dim(3);
    int w = x.dim(4);
    // Channel block 0 holds frame 2i, block 1 frame 2i+1: interleave them along time.
    Tensor interleaved = pairs.reshape(b, 2, c, t, h, w).permute(0, 2, 3, 1, 4, 5);
    return backend.contiguous(interleaved).reshape(b, c, 2 * t, h, w);
  }
}
