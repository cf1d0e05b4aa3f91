package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.List;

/**
 * The sinusoidal timestep features of diffusers' {@code Timesteps(flip_sin_to_cos=True,
 * downscale_freq_shift=0)}: {@code [cos(t·f_i) …, sin(t·f_i) …]} with {@code f_i =
 * exp(-ln(10000)·i/half)}; an odd width gets a trailing zero.
 */
final class TimestepSinusoid {
  private static final double MAX_PERIOD = 10000.0;

  private final Tensor frequencies; // [1, half]
  private final boolean padOne;

  private TimestepSinusoid(Tensor frequencies, boolean padOne) {
    this.frequencies = frequencies;
    this.padOne = padOne;
  }

  static TimestepSinusoid create(Backend backend, int width) {
    int half = width / 2;
    float[] f = new float[half];
    // float32 steps in the reference's order, so the frequencies round as the recording's did.
    float logPeriod = (float) -Math.log(MAX_PERIOD);
    for (int i = 0; i < half; i++) {
      f[i] = (float) Math.exp(logPeriod * i / half);
    }
    return new TimestepSinusoid(backend.upload(Tensor.of(f, 1, half), DType.F32), width % 2 == 1);
  }

  /**
   * Features {@code [..., width]} for float timesteps {@code [...]} ({@code [B]}, {@code [B, L]}).
   */
  Tensor apply(Backend backend, Tensor timesteps) {
    Tensor angles = backend.mul(timesteps.unsqueeze(timesteps.rank()), frequencies);
    Tensor features =
        backend.concat(
            List.of(
                backend.unary(angles, Backend.UnaryOp.COS),
                backend.unary(angles, Backend.UnaryOp.SIN)),
            angles.rank() - 1);
    return padOne ? backend.pad(features, new int[] {0, 1}, 0f) : features;
  }
}
