package dev.stepweave.core.loop;

import dev.stepweave.core.card.WorkKind;
import java.util.List;
import java.util.Objects;

/**
 * The work one request will ask of the pool, loop by loop: how many steps each loop runs and what
 * one of its steps needs. Admission prices a whole request from it (its predicted device time and
 * its largest single step, which no scheduler can split), before the request queues.
 *
 * @param phases the request's loops in program order
 */
public record WorkEstimate(List<Phase> phases) {
  /** A model that cannot say: the request is priced as one indivisible step of its footprint. */
  public static final WorkEstimate NONE = new WorkEstimate(List.of());

  /**
   * One loop of the request.
   *
   * @param loopId the card's loop id
   * @param kind its work kind (what the cost model calibrates by)
   * @param steps the steps it runs
   * @param perStep what one of its steps needs (its static cost seeds the price)
   */
  public record Phase(String loopId, WorkKind kind, int steps, ResourceRequest perStep) {
    public Phase {
      Objects.requireNonNull(loopId, "loopId");
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(perStep, "perStep");
      if (steps < 0) {
        throw new IllegalArgumentException("a phase cannot run " + steps + " steps");
      }
    }
  }

  public WorkEstimate {
    phases = List.copyOf(phases);
  }
}
