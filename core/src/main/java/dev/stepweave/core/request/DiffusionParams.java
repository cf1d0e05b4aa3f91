package dev.stepweave.core.request;

import java.util.Optional;

/**
 * The diffusion settings of a request.
 *
 * @param steps denoising steps, 1..1000
 * @param guidance classifier-free guidance scale, ≥ 0 (≤ 1 runs the conditional branch only)
 * @param seed the seed of the starting noise
 * @param width frame width in pixels, a positive multiple of 16
 * @param height frame height in pixels, a positive multiple of 16
 * @param frames frame count, 4k+1 (1 for an image)
 * @param fps frames per second of the video artifact
 * @param negativePrompt the unconditional branch's prompt ("" for none)
 * @param sampler "unipc", "euler" or "sde" (the stochastic sampler of RL rollouts); empty for the
 *     checkpoint's own scheduler
 * @param shift flow shift override; empty for the checkpoint's
 */
public record DiffusionParams(
    int steps,
    double guidance,
    long seed,
    int width,
    int height,
    int frames,
    int fps,
    String negativePrompt,
    Optional<String> sampler,
    Optional<Double> shift) {

  public static final int MAX_STEPS = 1000;

  /** The sampler names a request may choose. */
  public static final java.util.List<String> SAMPLERS = java.util.List.of("unipc", "euler", "sde");

  public DiffusionParams {
    negativePrompt = negativePrompt == null ? "" : negativePrompt;
    sampler = sampler == null ? Optional.empty() : sampler;
    shift = shift == null ? Optional.empty() : shift;
  }

  /**
   * Rejects settings no model can run, with a one-line message naming the setting.
   *
   * @throws InvalidRequestException naming the bad setting
   */
  /** These settings with another step count, guidance scale and sampler (empty: the card's). */
  public DiffusionParams withSampling(int steps, double guidance, Optional<String> sampler) {
    return new DiffusionParams(
        steps, guidance, seed, width, height, frames, fps, negativePrompt, sampler, shift);
  }

  /** These settings with another seed. */
  public DiffusionParams withSeed(long otherSeed) {
    return new DiffusionParams(
        steps, guidance, otherSeed, width, height, frames, fps, negativePrompt, sampler, shift);
  }

  public DiffusionParams validate() {
    if (steps < 1 || steps > MAX_STEPS) {
      throw new InvalidRequestException(
          "steps must be between 1 and " + MAX_STEPS + ", got " + steps);
    }
    if (!(guidance >= 0) || Double.isInfinite(guidance)) {
      throw new InvalidRequestException("guidance must be a finite number >= 0, got " + guidance);
    }
    if (width <= 0 || height <= 0 || width % 16 != 0 || height % 16 != 0) {
      throw new InvalidRequestException(
          "size must be positive multiples of 16, got " + width + "x" + height);
    }
    if (frames < 1 || (frames - 1) % 4 != 0) {
      throw new InvalidRequestException("frames must be 4k+1 (1, 5, 9, …, 81), got " + frames);
    }
    if (fps < 1 || fps > 240) {
      throw new InvalidRequestException("fps must be between 1 and 240, got " + fps);
    }
    sampler.ifPresent(
        s -> {
          if (!SAMPLERS.contains(s)) {
            throw new InvalidRequestException(
                "sampler must be unipc, euler or sde, got '" + s + "'");
          }
        });
    shift.ifPresent(
        s -> {
          if (!(s > 0) || Double.isInfinite(s)) {
            throw new InvalidRequestException("shift must be a finite number > 0, got " + s);
          }
        });
    return this;
  }
}
