package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs one batch as one call and splits it into per-request outcomes. A fault stays with its
 * request: when a batched call throws, each member is run alone so only the faulty one fails (a
 * batchable call is pure, so re-running is safe). A {@link PoolFatalException} is never isolated:
 * it propagates to the engine, which re-initialises the pool.
 */
final class BatchExecutor {
  /** One member's outcome: a result, or the fault that fails its request. */
  sealed interface Outcome {}

  record Ok(StepResult result) implements Outcome {}

  record Fault(RuntimeException cause) implements Outcome {}

  private BatchExecutor() {}

  static List<Outcome> run(List<WorkPlan> plans) {
    if (plans.size() == 1) {
      return List.of(alone(plans.get(0)));
    }
    List<BatchableCall> calls = new ArrayList<>(plans.size());
    for (WorkPlan p : plans) {
      calls.add((BatchableCall) p.call());
    }
    List<StepResult> results;
    try {
      results = calls.get(0).runBatch(calls);
      if (results.size() != calls.size()) {
        throw new IllegalStateException(
            "a batch of " + calls.size() + " calls returned " + results.size() + " results");
      }
    } catch (PoolFatalException e) {
      throw e;
    } catch (RuntimeException e) {
      return plans.stream().map(BatchExecutor::alone).toList();
    }
    return results.stream().<Outcome>map(Ok::new).toList();
  }

  private static Outcome alone(WorkPlan plan) {
    try {
      return new Ok(plan.call().run());
    } catch (PoolFatalException e) {
      throw e;
    } catch (RuntimeException e) {
      return new Fault(e);
    }
  }
}
