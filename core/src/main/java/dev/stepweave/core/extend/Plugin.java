package dev.stepweave.core.extend;

/**
 * A compute-altering extension (an interceptor) a deployment may enable. Requests never select
 * code: they name an enabled plugin and parameterise it through its {@link #schema}.
 */
public interface Plugin {

  /** The id requests and cards use ("dbcache"). */
  String id();

  /** Where it intercepts; two plugins of one kind conflict. */
  InterceptionPoint point();

  /** Whether it changes the output distribution (an exact request refuses it). */
  boolean distributionAltering();

  /**
   * Whether it reuses one step's computation at a later step: valid only when consecutive steps are
   * similar, which a few-step distilled model's are not.
   */
  boolean reusesAcrossSteps();

  ParamSchema schema();

  /** The interception points of a loop; each can be owned by one plugin. */
  enum InterceptionPoint {
    /** Replaces a denoising step's prediction (step caches). */
    STEP,
    /** Replaces a range of transformer blocks by a cached residual (block caches). */
    BLOCKS
  }
}
