package dev.stepweave.core.memory;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The reservations a pool holds now, by request. Not thread-safe: its owner (the admission
 * controller) serialises access.
 */
public final class ReservationLedger {
  private final Map<String, Reservation> held = new LinkedHashMap<>();

  /** Holds {@code r}; false when its request already holds one. */
  public boolean hold(Reservation r) {
    return held.putIfAbsent(r.requestId(), r) == null;
  }

  public boolean holds(String requestId) {
    return held.containsKey(requestId);
  }

  public void release(String requestId) {
    held.remove(requestId);
  }

  /** What is held, not counting the reservations of {@code released}. */
  public Usage usage(Collection<String> released) {
    int n = 0;
    long memory = 0;
    double compute = 0;
    long blocks = 0;
    for (Reservation h : held.values()) {
      if (!released.contains(h.requestId())) {
        n++;
        memory += h.memoryBytes();
        compute += h.computeMillis();
        blocks += h.cacheBlocks();
      }
    }
    return new Usage(n, memory, compute, blocks);
  }
}
