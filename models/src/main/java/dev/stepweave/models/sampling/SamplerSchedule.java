package dev.stepweave.models.sampling;

import java.util.Arrays;

/**
 * The per-step values of a sampler for a fixed number of steps.
 *
 * @param timesteps {@code [N]} the value the model is conditioned on at each step
 * @param sigmas {@code [N + 1]} noise level before each step, then the final one
 */
public record SamplerSchedule(float[] timesteps, float[] sigmas) {

  public SamplerSchedule {
    if (timesteps.length == 0 || sigmas.length != timesteps.length + 1) {
      throw new IllegalArgumentException(
          "schedule needs N >= 1 timesteps and N + 1 sigmas, got "
              + timesteps.length
              + " and "
              + sigmas.length);
    }
    timesteps = timesteps.clone();
    sigmas = sigmas.clone();
  }

  public int steps() {
    return timesteps.length;
  }

  public float timestep(int step) {
    return timesteps[step];
  }

  public float sigma(int index) {
    return sigmas[index];
  }

  @Override
  public float[] timesteps() {
    return timesteps.clone();
  }

  @Override
  public float[] sigmas() {
    return sigmas.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SamplerSchedule s
        && Arrays.equals(s.timesteps, timesteps)
        && Arrays.equals(s.sigmas, sigmas);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(timesteps) + Arrays.hashCode(sigmas);
  }

  @Override
  public String toString() {
    return "SamplerSchedule[timesteps="
        + Arrays.toString(timesteps)
        + ", sigmas="
        + Arrays.toString(sigmas)
        + "]";
  }
}
