package dev.stepweave.core.runtime;

import java.time.Duration;
import java.util.Objects;

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
 * @param admission when waiting requests may start: whenever they fit ({@link
 *     Admission#CONTINUOUS}, the default), or only as groups of one shape on an idle pool
 * @param recoveryCheckpoints when a running request's state is copied to host memory at a step
 *     boundary, so a pool-fatal fault resumes it from there instead of from the start of its loop
 *     ({@link RecoveryCheckpoints#DEFAULT}: whenever the copy costs at most 5 % of the work it
 *     protects)
 * @param recovery re-initialises the pool after a pool-fatal fault
 * @param costLimits what one request may cost, priced at submit ({@link CostLimits#UNLIMITED} by
 *     default; {@code stepweave serve} sets the device's)
 * @param switchDeferral while the model's components take turns on the device ({@link
 *     dev.stepweave.core.loop.ModelInstance#swappedComponents}), how long a step that needs a
 *     sleeping one may be passed over while steps of the awake one run, in multiples of the model's
 *     predicted switch cost ({@link #DEFAULT_SWITCH_DEFERRAL}; infinite: until no step needs the
 *     awake one)
 * @param trimAfterIdle how long the pool must be idle (nothing queued or running) before the
 *     backend gives its cached device memory back ({@code Backend.trim}): a busy pool keeps the
 *     blocks its steps reuse, an idle one holds no more than it needs ({@link
 *     #DEFAULT_TRIM_AFTER_IDLE})
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
    Admission admission,
    RecoveryCheckpoints recoveryCheckpoints,
    PoolRecovery recovery,
    CostLimits costLimits,
    double switchDeferral,
    Duration trimAfterIdle) {

  /**
   * Four switches: while requests in both phases keep coming, switching takes at most a fifth of
   * the device's time, and a passed-over step waits at most about four switches (≈ 73 s for Wan2.2
   * A14B's 14B experts, ≈ 18 s a switch on an H200) plus the step in flight.
   */
  public static final double DEFAULT_SWITCH_DEFERRAL = 4;

  /**
   * Two seconds: longer than the gap between one request's result and the next of a client that
   * submits them back to back (writing an 81-frame MP4 takes about 0.6 s), short against a server's
   * idle stretches. Giving the cache back after every request made the next one allocate every
   * block afresh from the driver.
   */
  public static final Duration DEFAULT_TRIM_AFTER_IDLE = Duration.ofSeconds(2);

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

  /** When waiting requests start. */
  public enum Admission {
    /**
     * Whenever they fit: a request starts at the next tick even while others run, and its steps
     * batch with theirs (step-level batching).
     */
    CONTINUOUS,
    /**
     * Request-level batching, as servers without step-level batching do it: only while nothing
     * runs, the first waiting request starts together with the waiting requests of its {@link
     * RequestShape} behind it — at most {@code min(maxRunning, maxBatchSize)}, so each tick's steps
     * of the group can be one call — and the group runs to its end; requests that arrive meanwhile,
     * whatever their shape, wait for the whole group to finish. A request of another shape is
     * passed over, not in the way: it heads a later group.
     */
    SHAPE_GROUPS_WHEN_IDLE
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
    Objects.requireNonNull(preemption, "preemption");
    Objects.requireNonNull(admission, "admission");
    Objects.requireNonNull(recovery, "recovery");
    Objects.requireNonNull(costLimits, "costLimits");
    if (!(switchDeferral >= 0)) {
      throw new IllegalArgumentException("switchDeferral must be >= 0, got " + switchDeferral);
    }
    if (trimAfterIdle == null || trimAfterIdle.isNegative()) {
      throw new IllegalArgumentException("trimAfterIdle must be >= 0, got " + trimAfterIdle);
    }
  }

  /**
   * Eight requests, batches of up to eight units and 10 s, no memory or compute limit (set them for
   * the device), a CPU-class device (100 GFLOP/s, 10 GB/s), no preemption, continuous admission,
   * recovery checkpoints on, a pool that needs nothing to re-initialise, no cost limits, and steps
   * of a sleeping swapped component passed over for at most {@link #DEFAULT_SWITCH_DEFERRAL}
   * switches, and cached device memory given back after {@link #DEFAULT_TRIM_AFTER_IDLE} idle.
   */
  public static EngineConfig defaults() {
    return builder().build();
  }

  /** A builder starting from {@link #defaults()}. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from this configuration. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** Sets fields by name; {@link #build} validates them. */
  public static final class Builder {
    private int maxRunning = 8;
    private int maxBatchSize = 8;
    private double maxBatchMillis = 10_000;
    private long memoryBudgetBytes = Long.MAX_VALUE;
    private double computeBudgetMillis = Double.MAX_VALUE;
    private int cacheBlocks = Integer.MAX_VALUE;
    private double deviceFlopsPerMilli = 1e8;
    private double deviceBytesPerMilli = 1e7;
    private Preemption preemption = Preemption.NONE;
    private Admission admission = Admission.CONTINUOUS;
    private RecoveryCheckpoints recoveryCheckpoints = RecoveryCheckpoints.DEFAULT;
    private PoolRecovery recovery = PoolRecovery.SAME_INSTANCE;
    private CostLimits costLimits = CostLimits.UNLIMITED;
    private double switchDeferral = DEFAULT_SWITCH_DEFERRAL;
    private Duration trimAfterIdle = DEFAULT_TRIM_AFTER_IDLE;

    private Builder() {}

    private Builder(EngineConfig c) {
      maxRunning = c.maxRunning;
      maxBatchSize = c.maxBatchSize;
      maxBatchMillis = c.maxBatchMillis;
      memoryBudgetBytes = c.memoryBudgetBytes;
      computeBudgetMillis = c.computeBudgetMillis;
      cacheBlocks = c.cacheBlocks;
      deviceFlopsPerMilli = c.deviceFlopsPerMilli;
      deviceBytesPerMilli = c.deviceBytesPerMilli;
      preemption = c.preemption;
      admission = c.admission;
      recoveryCheckpoints = c.recoveryCheckpoints;
      recovery = c.recovery;
      costLimits = c.costLimits;
      switchDeferral = c.switchDeferral;
      trimAfterIdle = c.trimAfterIdle;
    }

    public Builder maxRunning(int n) {
      maxRunning = n;
      return this;
    }

    public Builder maxBatchSize(int units) {
      maxBatchSize = units;
      return this;
    }

    public Builder maxBatchMillis(double millis) {
      maxBatchMillis = millis;
      return this;
    }

    public Builder memoryBudgetBytes(long bytes) {
      memoryBudgetBytes = bytes;
      return this;
    }

    public Builder computeBudgetMillis(double millis) {
      computeBudgetMillis = millis;
      return this;
    }

    public Builder cacheBlocks(int blocks) {
      cacheBlocks = blocks;
      return this;
    }

    public Builder deviceFlopsPerMilli(double flops) {
      deviceFlopsPerMilli = flops;
      return this;
    }

    public Builder deviceBytesPerMilli(double bytes) {
      deviceBytesPerMilli = bytes;
      return this;
    }

    public Builder preemption(Preemption p) {
      preemption = p;
      return this;
    }

    public Builder admission(Admission a) {
      admission = a;
      return this;
    }

    public Builder recoveryCheckpoints(RecoveryCheckpoints policy) {
      recoveryCheckpoints = policy;
      return this;
    }

    public Builder recovery(PoolRecovery r) {
      recovery = r;
      return this;
    }

    public Builder costLimits(CostLimits limits) {
      costLimits = limits;
      return this;
    }

    /**
     * In multiples of the model's predicted switch cost; infinite: while the awake one has work.
     */
    public Builder switchDeferral(double switchCosts) {
      switchDeferral = switchCosts;
      return this;
    }

    public Builder trimAfterIdle(Duration idle) {
      trimAfterIdle = idle;
      return this;
    }

    public EngineConfig build() {
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
          admission,
          recoveryCheckpoints,
          recovery,
          costLimits,
          switchDeferral,
          trimAfterIdle);
    }
  }
}
