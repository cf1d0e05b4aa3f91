package dev.stepweave.core.card;

/**
 * The settings a request gets for what it leaves out: what the model was made to generate.
 *
 * @param width frame width in pixels
 * @param height frame height in pixels
 * @param frames frames per video
 * @param fps frames per second
 * @param steps denoising steps
 * @param guidance guidance scale
 */
public record GenerationDefaults(
    int width, int height, int frames, int fps, int steps, double guidance) {
  /** Wan 2.1's reference settings: 832×480, 81 frames at 16 fps, 50 steps, guidance 5. */
  public static final GenerationDefaults WAN_480P =
      new GenerationDefaults(832, 480, 81, 16, 50, 5.0);

  public GenerationDefaults {
    if (width <= 0 || height <= 0 || frames <= 0 || fps <= 0 || steps <= 0 || guidance < 0) {
      throw new IllegalArgumentException("invalid generation defaults " + width + "x" + height);
    }
  }
}
