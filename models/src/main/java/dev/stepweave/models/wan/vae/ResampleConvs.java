package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * What {@link Downsample} and {@link Upsample} load alike: {@code resample.1}, a 3×3 convolution
 * applied per frame (as a 1×3×3 kernel), and for the temporal variants {@code time_conv}, a causal
 * convolution over frames with a cache slot of its own.
 *
 * @param time the temporal convolution, or null for a spatial-only resampler
 * @param slot {@code time}'s slot in the causal cache, or -1 without one
 */
record ResampleConvs(Tensor spatialWeight, Tensor spatialBias, CausalConv3d time, int slot) {

  /**
   * Loads {@code resample.1} ({@code channels → spatialOut}) and, when {@code temporal}, {@code
   * time_conv} ({@code channels → timeOut}, kernel 3×1×1 with {@code timeStride} and {@code
   * timePadding}).
   */
  static ResampleConvs load(
      Weights weights,
      int channels,
      int spatialOut,
      boolean temporal,
      int timeOut,
      int[] timeStride,
      int[] timePadding,
      CacheSlots slots,
      ConvolutionPrecision precision) {
    Weights conv = weights.scope("resample.1");
    Tensor w = conv.take("weight", spatialOut, channels, 3, 3).unsqueeze(2);
    Tensor b = conv.take("bias", spatialOut);
    if (!temporal) {
      return new ResampleConvs(w, b, null, -1);
    }
    CausalConv3d time =
        CausalConv3d.load(
            weights.scope("time_conv"),
            channels,
            timeOut,
            new int[] {3, 1, 1},
            timeStride,
            timePadding,
            precision);
    return new ResampleConvs(w, b, time, slots.allocate());
  }
}
