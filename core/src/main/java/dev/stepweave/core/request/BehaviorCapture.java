package dev.stepweave.core.request;

/**
 * How much of a generation's behaviour a request captures (design §10's {@code BehaviorRecord}):
 * opt-in, because a full trajectory costs memory proportional to steps × latents.
 */
public enum BehaviorCapture {
  /** Nothing: serving. */
  NONE,
  /**
   * The schedule, the seed, per-step log-probabilities where the sampler has them, the text
   * conditioning and the final latents: what a likelihood-free method (DiffusionNFT-style) trains
   * on.
   */
  FINAL,
  /**
   * {@link #FINAL} plus the latents before every step: what a log-probability method
   * (Flow-GRPO-style) re-evaluates under the policy it trains.
   */
  TRAJECTORY;

  /** The wire name ("none", "final", "trajectory"). */
  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
