package dev.stepweave.core.request;

/**
 * What a request wants back besides its main artifact.
 *
 * @param latents also return the final latents as a {@code LatentArtifact}
 * @param previews emit a {@code media.preview} event (a decoded-free latent preview) every N steps;
 *     0 for none
 * @param behavior what the denoise loop records of its own behaviour ({@link BehaviorRecord}, as a
 *     {@code BehaviorArtifact}); {@link BehaviorCapture#NONE} when serving
 */
public record OutputSpec(boolean latents, int previews, BehaviorCapture behavior) {
  public static final OutputSpec DEFAULT = new OutputSpec(false, 0);

  /** The main artifact and the final latents, no previews. */
  public static final OutputSpec WITH_LATENTS = new OutputSpec(true, 0);

  public OutputSpec {
    if (previews < 0) {
      throw new InvalidRequestException("previews must be >= 0, got " + previews);
    }
    behavior = behavior == null ? BehaviorCapture.NONE : behavior;
  }

  /** No behaviour capture. */
  public OutputSpec(boolean latents, int previews) {
    this(latents, previews, BehaviorCapture.NONE);
  }

  /** The same outputs with behaviour captured at {@code level}. */
  public OutputSpec capturing(BehaviorCapture level) {
    return new OutputSpec(latents, previews, level);
  }
}
