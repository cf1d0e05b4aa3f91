package dev.stepweave.core.request;

/**
 * What a request wants back besides its main artifact.
 *
 * @param latents also return the final latents as a {@code LatentArtifact}
 * @param previews emit a {@code media.preview} event (a decoded-free latent preview) every N steps;
 *     0 for none
 * @param behavior what the denoise loop records of its own behaviour ({@link BehaviorRecord}, as a
 *     {@code BehaviorArtifact}); {@link BehaviorCapture#NONE} when serving
 * @param frames emit a {@code media.frames} event with each chunk of final frames as the decoder
 *     completes it (so a writer can encode while the rest decodes); the main artifact still holds
 *     them all
 */
public record OutputSpec(boolean latents, int previews, BehaviorCapture behavior, boolean frames) {
  public static final OutputSpec DEFAULT = new OutputSpec(false, 0);

  /** The main artifact and the final latents, no previews. */
  public static final OutputSpec WITH_LATENTS = new OutputSpec(true, 0);

  public OutputSpec {
    if (previews < 0) {
      throw new InvalidRequestException("previews must be >= 0, got " + previews);
    }
    behavior = behavior == null ? BehaviorCapture.NONE : behavior;
  }

  /** No behaviour capture, no frame events. */
  public OutputSpec(boolean latents, int previews) {
    this(latents, previews, BehaviorCapture.NONE, false);
  }

  /** The same outputs with behaviour captured at {@code level}. */
  public OutputSpec capturing(BehaviorCapture level) {
    return new OutputSpec(latents, previews, level, frames);
  }

  /** The same outputs with {@code media.frames} events. */
  public OutputSpec streamingFrames() {
    return new OutputSpec(latents, previews, behavior, true);
  }
}
