package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.tensor.Fault;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Runs one batch as one call and splits it into per-request outcomes, by what a failure means
 * ({@link Fault}, from the pool's backend):
 *
 * <ul>
 *   <li>request-fatal: each member is run alone, so only the faulty one fails (a batchable call is
 *       pure, so re-running is safe);
 *   <li>out-of-memory: the batch is retried once as two halves; a member whose retry runs out of
 *       memory again (or that ran alone) fails, request-fatal;
 *   <li>pool-fatal (and a {@link PoolFatalException} from a step): never isolated; it propagates as
 *       a {@link PoolFatalException} to the engine, which rebuilds the pool.
 * </ul>
 */
final class BatchExecutor {
  /** One member's outcome: a result, or the fault that fails its request. */
  sealed interface Outcome {}

  record Ok(StepResult result) implements Outcome {}

  record Fault(RuntimeException cause) implements Outcome {}

  private final Function<RuntimeException, dev.stepweave.tensor.Fault> classify;

  /**
   * @param classify what a step's failure means (the pool backend's {@code classify}); a {@link
   *     PoolFatalException} is pool-fatal whatever it says
   */
  BatchExecutor(Function<RuntimeException, dev.stepweave.tensor.Fault> classify) {
    this.classify = classify;
  }

  List<Outcome> run(List<WorkPlan> plans) {
    return run(plans, true);
  }

  private List<Outcome> run(List<WorkPlan> plans, boolean mayHalve) {
    if (plans.size() == 1) {
      return List.of(alone(plans.get(0)));
    }
    List<BatchableCall> calls = new ArrayList<>(plans.size());
    for (WorkPlan p : plans) {
      calls.add((BatchableCall) p.call());
    }
    try {
      List<StepResult> results = calls.get(0).runBatch(calls);
      if (results.size() != calls.size()) {
        throw new IllegalStateException(
            "a batch of " + calls.size() + " calls returned " + results.size() + " results");
      }
      return results.stream().<Outcome>map(Ok::new).toList();
    } catch (RuntimeException e) {
      return switch (faultOf(e)) {
        case dev.stepweave.tensor.Fault.PoolFatal p -> throw poolFatal(p, e);
        case dev.stepweave.tensor.Fault.OutOfMemory m -> {
          if (!mayHalve) {
            yield plans.stream()
                .<Outcome>map(x -> new Fault(outOfMemory(m, plans.size())))
                .toList();
          }
          int half = plans.size() / 2;
          List<Outcome> out = new ArrayList<>(run(plans.subList(0, half), false));
          out.addAll(run(plans.subList(half, plans.size()), false));
          yield out;
        }
        case dev.stepweave.tensor.Fault.RequestFatal r -> plans.stream().map(this::alone).toList();
      };
    }
  }

  private Outcome alone(WorkPlan plan) {
    try {
      return new Ok(plan.call().run());
    } catch (RuntimeException e) {
      return switch (faultOf(e)) {
        case dev.stepweave.tensor.Fault.PoolFatal p -> throw poolFatal(p, e);
        case dev.stepweave.tensor.Fault.OutOfMemory m -> new Fault(outOfMemory(m, 1));
        case dev.stepweave.tensor.Fault.RequestFatal r -> new Fault(e);
      };
    }
  }

  /** What {@code e} means for the pool. */
  dev.stepweave.tensor.Fault faultOf(RuntimeException e) {
    if (e instanceof PoolFatalException) {
      return new dev.stepweave.tensor.Fault.PoolFatal(e.getMessage());
    }
    return classify.apply(e);
  }

  private static PoolFatalException poolFatal(
      dev.stepweave.tensor.Fault.PoolFatal p, RuntimeException e) {
    return e instanceof PoolFatalException pf ? pf : new PoolFatalException(p.reason(), e);
  }

  private static IllegalStateException outOfMemory(
      dev.stepweave.tensor.Fault.OutOfMemory m, int batch) {
    return new IllegalStateException(
        "out of device memory in a batch of " + batch + ": " + m.reason());
  }
}
