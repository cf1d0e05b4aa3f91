package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;

/**
 * What stands behind {@code ctx.execute(plan)}. The engine of one request at a time runs plans
 * directly; the multi-request scheduler replaces only this piece (admitting, batching and placing
 * plans of many loops) without any loop changing.
 */
public interface StepExecutor {
  StepResult execute(WorkPlan plan);

  /** Runs each plan on the calling thread as soon as it is asked for, and times it. */
  StepExecutor DIRECT =
      plan -> {
        long t0 = System.nanoTime();
        StepResult r = plan.call().run();
        return r.withElapsed(java.time.Duration.ofNanos(System.nanoTime() - t0));
      };
}
