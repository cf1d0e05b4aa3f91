package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.List;

/**
 * Halves height and width with a stride-2 3×3 convolution per frame (padded by one on the bottom
 * and right only); the temporal variant then halves time with a stride-2 causal convolution over
 * frames.
 */
final class Downsample implements CausalLayer {
  private static final int[] SPATIAL_STRIDE = {1, 2, 2};
  private static final int[] NO_PADDING = {0, 0, 0};
  private static final int[] BOTTOM_RIGHT_PAD = {0, 1, 0, 1};

  private final Backend backend;
  private final ResampleConvs convs;
  private final ConvolutionPrecision precision;

  private Downsample(Backend backend, ResampleConvs convs, ConvolutionPrecision precision) {
    this.backend = backend;
    this.convs = convs;
    this.precision = precision;
  }

  /** Loads {@code resample.1} and, when {@code temporal}, {@code time_conv}. */
  static Downsample load(
      Weights weights,
      int channels,
      boolean temporal,
      CacheSlots slots,
      ConvolutionPrecision precision) {
    ResampleConvs convs =
        ResampleConvs.load(
            weights,
            channels,
            channels,
            temporal,
            channels,
            new int[] {2, 1, 1},
            NO_PADDING,
            slots,
            precision);
    return new Downsample(weights.backend(), convs, precision);
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    Tensor padded = backend.pad(precision.asInput(backend, x), BOTTOM_RIGHT_PAD, 0f);
    Tensor y =
        precision.convolve(
            backend,
            padded,
            convs.spatialWeight(),
            convs.spatialBias(),
            SPATIAL_STRIDE,
            NO_PADDING,
            x.dtype());
    if (convs.time() == null) {
      return y;
    }
    // The first chunk (one frame) passes unchanged; later chunks are convolved together with the
    // last frame of the chunk before, which is all that is ever remembered here.
    // The new tail replaces the previous one only after it is read: a replaced tail is freed.
    Tensor previous = cache.tail(convs.slot());
    Tensor out =
        previous == null
            ? y
            : convs
                .time()
                .apply(
                    Frames.concat(backend, List.of(Frames.recalled(backend, previous, y), y)),
                    null);
    cache.setTail(convs.slot(), Frames.kept(backend, Frames.last(y, 1)));
    return out;
  }
}
