package dev.stepweave.core.loop;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.RequestEvent;
import java.util.Map;

/**
 * What the runtime gives a running loop. {@link #execute} is the inversion point: the loop
 * describes a step, the runtime admits, batches, places and runs it.
 */
public interface LoopContext {

  /** Runs one planned step and returns its result. */
  StepResult execute(WorkPlan plan);

  /** Publishes an event of this request. */
  void emit(RequestEvent event);

  /** The request's cancellation scope. */
  CancelScope cancelScope();

  /** Results of the loops that ran before this one in the program, by loop id. */
  Map<String, LoopResult> upstream();

  /**
   * The result of loop {@code loopId}, which the program ran before this one.
   *
   * @throws IllegalStateException when it has not run (a program that orders loops wrongly)
   */
  default LoopResult upstream(String loopId) {
    LoopResult r = upstream().get(loopId);
    if (r == null) {
      throw new IllegalStateException(
          "no result of loop '" + loopId + "' before this one (has " + upstream().keySet() + ")");
    }
    return r;
  }

  /**
   * The extensions the deployment enabled (plugins requests may parameterise, observers). Loops
   * assemble their hooks from it in {@code init}.
   */
  default Extensions extensions() {
    return Extensions.NONE;
  }

  /**
   * The request's adapters, resolved against the deployment's registry when it was accepted (in the
   * request's order; empty when it names none).
   */
  default java.util.List<dev.stepweave.core.extend.ResolvedAdapter> adapters() {
    return java.util.List.of();
  }

  /**
   * Keeps {@code resource} (a lease on shared device state, such as a cached adapter's weights)
   * until the run lets go of its device state: when it finishes, fails, is cancelled, suspended or
   * rewound. A context that tracks no run keeps it for good.
   */
  default void hold(AutoCloseable resource) {}
}
