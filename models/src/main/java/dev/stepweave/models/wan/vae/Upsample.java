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
  private final ResampleConvs convs;
  private final ConvolutionPrecision precision;

  private Upsample(Backend backend, ResampleConvs convs, ConvolutionPrecision precision) {
    this.backend = backend;
    this.convs = convs;
    this.precision = precision;
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
    ResampleConvs convs =
        ResampleConvs.load(
            weights,
            channels,
            outChannels,
            temporal,
            2 * channels,
            UNIT_STRIDE,
            new int[] {1, 0, 0},
            slots,
            precision);
    return new Upsample(weights.backend(), convs, precision);
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    Tensor y = convs.time() == null ? x : doubleFrames(x, cache);
    // Converted before the doubling, which copies: a quarter of the values to convert.
    Tensor up = backend.upsampleNearest2d(precision.asInput(backend, y), 2, 2);
    return precision.convolve(
        backend,
        up,
        convs.spatialWeight(),
        convs.spatialBias(),
        UNIT_STRIDE,
        SAME_PADDING_2D,
        x.dtype());
  }

  /**
   * Whether this is a temporal upsampler that has not yet seen the first chunk of the call whose
   * cache is {@code cache}: the chunk it will let through without doubling time.
   */
  boolean awaitsFirstChunk(CausalCache cache) {
    return convs.time() != null && !cache.firstChunkPassed(convs.slot());
  }

  /**
   * The first chunk passes with its frame count unchanged and only marks the slot; from the second
   * chunk on, frames are doubled, the first time with zeros as the remembered past.
   */
  private Tensor doubleFrames(Tensor x, CausalCache cache) {
    if (!cache.firstChunkPassed(convs.slot())) {
      cache.markFirstChunkPassed(convs.slot());
      return x;
    }
    Tensor remembered = cache.tail(convs.slot());
    Tensor keep =
        remembered == null && Frames.count(x) < Frames.CACHED
            ? Frames.kept(backend, Frames.concat(backend, List.of(Frames.zeros(backend, x, 1), x)))
            : Frames.tail(backend, x, remembered);
    Tensor pairs = backend.contiguous(convs.time().apply(x, remembered));
    cache.setTail(convs.slot(), keep);
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
