package dev.stepweave.core.runtime;

import dev.stepweave.core.memory.PoolBudget;
import dev.stepweave.core.memory.Reservation;
import dev.stepweave.core.memory.ReservationLedger;
import java.util.Collection;
import java.util.List;

/**
 * The admission policy: a request is admitted only when a running slot is free and its {@link
 * Reservation} — memory, predicted compute and cache blocks — can be held against the pool's {@link
 * PoolBudget} all at once. Reservations are held until the request ends (completes, fails, is
 * cancelled or preempted), never discovered at a later step.
 */
final class AdmissionController {
  private final int maxRunning;
  private final PoolBudget budget;
  private final ReservationLedger ledger = new ReservationLedger();

  AdmissionController(EngineConfig config) {
    this.maxRunning = config.maxRunning();
    this.budget =
        new PoolBudget(
            config.memoryBudgetBytes(), config.computeBudgetMillis(), config.cacheBlocks());
  }

  /** Why a request could never run on this pool, or null if it fits an empty pool. */
  String neverFits(Reservation r) {
    return budget.exceededBy(r).orElse(null);
  }

  /** Whether {@code r} would fit once the reservations of {@code released} are given back. */
  synchronized boolean fits(Reservation r, Collection<String> released) {
    var used = ledger.usage(released);
    return used.reservations() + 1 <= maxRunning && budget.fits(r, used);
  }

  /** Reserves {@code r} if it fits now. */
  synchronized boolean tryReserve(Reservation r) {
    return !ledger.holds(r.requestId()) && fits(r, List.of()) && ledger.hold(r);
  }

  synchronized void release(String requestId) {
    ledger.release(requestId);
  }
}
