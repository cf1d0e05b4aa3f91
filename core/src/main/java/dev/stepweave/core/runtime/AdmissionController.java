package dev.stepweave.core.runtime;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The reservation gate: a request is admitted only when its memory (resident state plus worst-case
 * peak activation), its predicted compute and its cache blocks can all be reserved against the
 * pool's budgets at once, and a running slot is free. Reservations are held until the request ends
 * (completes, fails, is cancelled or preempted), never discovered at a later step.
 */
final class AdmissionController {
  /** What one request holds while it runs. */
  record Reservation(String requestId, long memoryBytes, double computeMillis, int cacheBlocks) {}

  /** What is reserved now, against the budgets. */
  record Usage(int running, long memoryBytes, double computeMillis, int cacheBlocks) {}

  enum Verdict {
    ADMIT,
    WAIT,
    NEVER
  }

  private final EngineConfig budget;
  private final Map<String, Reservation> held = new LinkedHashMap<>();

  AdmissionController(EngineConfig budget) {
    this.budget = budget;
  }

  /** Why a request could never run on this pool, or null if it fits an empty pool. */
  String neverFits(Reservation r) {
    if (r.memoryBytes() > budget.memoryBudgetBytes()) {
      return "needs "
          + r.memoryBytes()
          + " bytes of device memory, the pool has "
          + budget.memoryBudgetBytes();
    }
    if (r.computeMillis() > budget.computeBudgetMillis()) {
      return String.format(
          "needs %.0f predicted device-ms, the pool's compute budget is %.0f",
          r.computeMillis(), budget.computeBudgetMillis());
    }
    if (r.cacheBlocks() > budget.cacheBlocks()) {
      return "needs " + r.cacheBlocks() + " cache blocks, the pool has " + budget.cacheBlocks();
    }
    return null;
  }

  synchronized Verdict check(Reservation r) {
    return neverFits(r) != null
        ? Verdict.NEVER
        : fits(r, java.util.List.of()) ? Verdict.ADMIT : Verdict.WAIT;
  }

  /** Whether {@code r} would fit once the reservations of {@code released} are given back. */
  synchronized boolean fits(Reservation r, Collection<String> released) {
    int running = 0;
    long memory = 0;
    double compute = 0;
    long blocks = 0;
    for (Reservation h : held.values()) {
      if (!released.contains(h.requestId())) {
        running++;
        memory += h.memoryBytes();
        compute += h.computeMillis();
        blocks += h.cacheBlocks();
      }
    }
    return running + 1 <= budget.maxRunning()
        && r.memoryBytes() <= budget.memoryBudgetBytes() - memory
        && r.computeMillis() <= budget.computeBudgetMillis() - compute
        && r.cacheBlocks() <= budget.cacheBlocks() - blocks;
  }

  /** Reserves {@code r} if it fits now. */
  synchronized boolean tryReserve(Reservation r) {
    if (held.containsKey(r.requestId()) || !fits(r, java.util.List.of())) {
      return false;
    }
    held.put(r.requestId(), r);
    return true;
  }

  synchronized void release(String requestId) {
    held.remove(requestId);
  }

  synchronized Reservation reservation(String requestId) {
    return held.get(requestId);
  }

  synchronized Usage usage() {
    long memory = 0;
    double compute = 0;
    int blocks = 0;
    for (Reservation h : held.values()) {
      memory += h.memoryBytes();
      compute += h.computeMillis();
      blocks += h.cacheBlocks();
    }
    return new Usage(held.size(), memory, compute, blocks);
  }
}
