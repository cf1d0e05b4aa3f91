package dev.stepweave.core.runtime;

/**
 * The budgets and policies of one engine's pool.
 *
 * @param maxRunning requests admitted at once (each keeps its loop state resident)
 * @param maxBatchSize work units in one batched call
 * @param maxBatchMillis predicted device-ms of one batched call (bounds a tick's latency; a unit
 *     that alone exceeds it still runs, alone)
 * @param memoryBudgetBytes device memory for admitted requests: resident loop state plus worst-case
 *     peak activation, reserved at admission
 * @param computeBudgetMillis predicted device-ms of all admitted, unfinished requests (bounds how
 *     far ahead the pool is committed)
 * @param cacheBlocks cache blocks the pool can hand out
 * @param deviceFlopsPerMilli the device's sustained FLOP rate, to turn static FLOP estimates into
 *     device-ms before anything was measured
 * @param deviceBytesPerMilli the device's sustained memory bandwidth, likewise
 * @param preemption what happens to running requests when a higher-priority one cannot fit
 * @param recoveryCheckpoints serialise every running request after each step and keep it in host
 *     memory, so a pool-fatal fault resumes it from its last step instead of from the start
 * @param recovery re-initialises the pool after a pool-fatal fault
 */
public record EngineConfig(
    int maxRunning,
    int maxBatchSize,
    double maxBatchMillis,
    long memoryBudgetBytes,
    double computeBudgetMillis,
    int cacheBlocks,
    double deviceFlopsPerMilli,
    double deviceBytesPerMilli,
    Preemption preemption,
    boolean recoveryCheckpoints,
    PoolRecovery recovery) {

  /** What becomes of a running request displaced by a higher-priority one. */
  public enum Preemption {
    /** Running requests are never displaced; a higher priority only orders the queue. */
    NONE,
    /**
     * At a step boundary the lowest-priority running request is serialised to a host checkpoint,
     * its device reservation released, and it waits in the queue (at its priority, ahead of later
     * arrivals) to resume from that checkpoint. Its host copy is not counted against the device
     * budget.
     */
    SERIALIZE_TO_HOST
  }

  public EngineConfig {
    if (maxRunning < 1 || maxBatchSize < 1) {
      throw new IllegalArgumentException("maxRunning and maxBatchSize must be >= 1");
    }
    if (!(maxBatchMillis > 0) || memoryBudgetBytes < 0 || !(computeBudgetMillis > 0)) {
      throw new IllegalArgumentException("budgets must be positive");
    }
    if (cacheBlocks < 0 || !(deviceFlopsPerMilli > 0) || !(deviceBytesPerMilli > 0)) {
      throw new IllegalArgumentException("cache blocks and device rates must be positive");
    }
    java.util.Objects.requireNonNull(preemption, "preemption");
    java.util.Objects.requireNonNull(recovery, "recovery");
  }

  /**
   * Eight requests, batches of up to eight units and 10 s, no memory or compute limit (set them for
   * the device), a CPU-class device (100 GFLOP/s, 10 GB/s), no preemption, recovery checkpoints on,
   * and a pool that needs nothing to re-initialise.
   */
  public static EngineConfig defaults() {
    return new EngineConfig(
        8,
        8,
        10_000,
        Long.MAX_VALUE,
        Double.MAX_VALUE,
        Integer.MAX_VALUE,
        1e8,
        1e7,
        Preemption.NONE,
        true,
        PoolRecovery.SAME_INSTANCE);
  }

  public EngineConfig withMaxRunning(int n) {
    return new EngineConfig(
        n,
        maxBatchSize,
        maxBatchMillis,
        memoryBudgetBytes,
        computeBudgetMillis,
        cacheBlocks,
        deviceFlopsPerMilli,
        deviceBytesPerMilli,
        preemption,
        recoveryCheckpoints,
        recovery);
  }

  public EngineConfig withBatching(int size, double millis) {
    return new EngineConfig(
        maxRunning,
        size,
        millis,
        memoryBudgetBytes,
        computeBudgetMillis,
        cacheBlocks,
        deviceFlopsPerMilli,
        deviceBytesPerMilli,
        preemption,
        recoveryCheckpoints,
        recovery);
  }

  public EngineConfig withBudgets(long memoryBytes, double computeMillis, int blocks) {
    return new EngineConfig(
        maxRunning,
        maxBatchSize,
        maxBatchMillis,
        memoryBytes,
        computeMillis,
        blocks,
        deviceFlopsPerMilli,
        deviceBytesPerMilli,
        preemption,
        recoveryCheckpoints,
        recovery);
  }

  /** This configuration with {@code bytes} of device memory for requests (see MemoryBudget). */
  public EngineConfig withMemoryBudget(long bytes) {
    return withBudgets(bytes, computeBudgetMillis, cacheBlocks);
  }

  public EngineConfig withDeviceRates(double flopsPerMilli, double bytesPerMilli) {
    return new EngineConfig(
        maxRunning,
        maxBatchSize,
        maxBatchMillis,
        memoryBudgetBytes,
        computeBudgetMillis,
        cacheBlocks,
        flopsPerMilli,
        bytesPerMilli,
        preemption,
        recoveryCheckpoints,
        recovery);
  }

  public EngineConfig withPreemption(Preemption p) {
    return new EngineConfig(
        maxRunning,
        maxBatchSize,
        maxBatchMillis,
        memoryBudgetBytes,
        computeBudgetMillis,
        cacheBlocks,
        deviceFlopsPerMilli,
        deviceBytesPerMilli,
        p,
        recoveryCheckpoints,
        recovery);
  }

  public EngineConfig withRecovery(boolean checkpoints, PoolRecovery r) {
    return new EngineConfig(
        maxRunning,
        maxBatchSize,
        maxBatchMillis,
        memoryBudgetBytes,
        computeBudgetMillis,
        cacheBlocks,
        deviceFlopsPerMilli,
        deviceBytesPerMilli,
        preemption,
        checkpoints,
        r);
  }
}
