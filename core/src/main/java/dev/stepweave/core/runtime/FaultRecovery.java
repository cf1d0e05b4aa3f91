package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.ModelInstance;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * The recovery layer: after a pool-fatal fault it re-initialises the pool ({@link PoolRecovery})
 * and rewinds every running request to its last checkpoint, so its next step resumes there on the
 * new instance. A pool that faults {@link #MAX_CONSECUTIVE_POOL_FAULTS} times in a row, with no
 * tick completing between, or whose re-initialisation fails, fails its running requests instead.
 */
final class FaultRecovery {
  /** Pool faults in a row, with no step completing between them, before the engine gives up. */
  static final int MAX_CONSECUTIVE_POOL_FAULTS = 3;

  private final PoolRecovery recovery;
  private final AtomicLong faults = new AtomicLong();
  private int consecutiveFaults;
  private volatile boolean recovering;

  FaultRecovery(PoolRecovery recovery) {
    this.recovery = recovery;
  }

  /**
   * Handles one pool-fatal fault on {@code broken}.
   *
   * @param running the running requests: rewound, or handed to {@code fail} with the reason
   * @return the instance to go on with ({@code broken} when recovery gave up)
   */
  ModelInstance recover(
      ModelInstance broken,
      Throwable cause,
      List<ProgramRun> running,
      BiConsumer<ProgramRun, Throwable> fail) {
    faults.incrementAndGet();
    recovering = true;
    try {
      if (++consecutiveFaults > MAX_CONSECUTIVE_POOL_FAULTS) {
        for (ProgramRun run : running) {
          fail.accept(
              run, new IllegalStateException("pool failed repeatedly: " + cause.getMessage()));
        }
        return broken;
      }
      ModelInstance fresh = recovery.reinitialise(broken, cause);
      if (!fresh.card().modelId().equals(broken.card().modelId())) {
        throw new IllegalStateException("pool recovery returned another model's instance");
      }
      running.forEach(ProgramRun::rewind);
      return fresh;
    } catch (RuntimeException e) {
      for (ProgramRun run : running) {
        fail.accept(
            run, new IllegalStateException("pool re-initialisation failed: " + e.getMessage()));
      }
      return broken;
    } finally {
      recovering = false;
    }
  }

  /** A tick ran all its calls: the faults before it no longer count as in a row. */
  void tickCompleted() {
    consecutiveFaults = 0;
  }

  /** Whether a recovery is in progress (the pool is not accepting). */
  boolean recovering() {
    return recovering;
  }

  /** Pool faults so far. */
  long faults() {
    return faults.get();
  }
}
