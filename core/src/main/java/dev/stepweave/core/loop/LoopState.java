package dev.stepweave.core.loop;

/**
 * All per-request state of one loop: latents, sampler history, RNG state, policy and interceptor
 * state. Nothing per-request lives in components, policies or statics. A state is serialisable
 * through its loop ({@link Loop#serialize}, {@link Loop#deserialize}), so a run can stop after any
 * step and resume elsewhere.
 */
public interface LoopState {

  /** Steps this loop has completed. */
  int stepsDone();

  /** Steps this loop will run in total (for progress and cost). */
  int totalSteps();
}
