package dev.stepweave.core.memory;

import java.util.Optional;

/**
 * What one pool's requests may reserve together: device memory, predicted device-ms of unfinished
 * work, and cache blocks.
 */
public record PoolBudget(long memoryBytes, double computeMillis, int cacheBlocks) {

  /** Why {@code r} could not fit even an empty pool, or empty when it could. */
  public Optional<String> exceededBy(Reservation r) {
    if (r.memoryBytes() > memoryBytes) {
      return Optional.of(
          "needs " + r.memoryBytes() + " bytes of device memory, the pool has " + memoryBytes);
    }
    if (r.computeMillis() > computeMillis) {
      return Optional.of(
          String.format(
              "needs %.0f predicted device-ms, the pool's compute budget is %.0f",
              r.computeMillis(), computeMillis));
    }
    if (r.cacheBlocks() > cacheBlocks) {
      return Optional.of("needs " + r.cacheBlocks() + " cache blocks, the pool has " + cacheBlocks);
    }
    return Optional.empty();
  }

  /** Whether {@code r} fits beside what {@code used} already holds. */
  public boolean fits(Reservation r, Usage used) {
    return r.memoryBytes() <= memoryBytes - used.memoryBytes()
        && r.computeMillis() <= computeMillis - used.computeMillis()
        && r.cacheBlocks() <= cacheBlocks - used.cacheBlocks();
  }
}
