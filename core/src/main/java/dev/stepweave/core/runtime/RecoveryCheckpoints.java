package dev.stepweave.core.runtime;

import java.time.Duration;
import java.util.Objects;

/**
 * When the engine copies a running request's state to host memory at a step boundary, so that a
 * pool-fatal fault resumes it from there instead of from the start of its loop.
 *
 * <p>A capture copies only the tensors that changed since the previous one ({@code
 * HostCheckpoints}). It is taken after a step when at least {@code interval} of step time has
 * passed since the run's previous capture <em>and</em> its predicted copy time is at most {@code
 * maxOverhead} of that step time — so checkpointing never costs more than that share of the work it
 * protects. On the CPU nothing needs copying and every step is captured; on a GPU a denoising step
 * (a few MB of new latents against a second of compute) is captured every step, while a VAE decode,
 * whose causal caches change wholesale each step, is captured only once enough work would be lost
 * to justify the copy (in practice: not within a decode of a few seconds, which simply restarts).
 * Preemption and checkpoint sinks capture regardless.
 *
 * @param enabled whether recovery checkpoints are taken at all
 * @param interval the least step time between two captures of one run
 * @param maxOverhead the largest predicted copy time, as a share of the step time it protects
 */
public record RecoveryCheckpoints(boolean enabled, Duration interval, double maxOverhead) {
  /** Every step whose capture costs at most 5 % of the work since the last one. */
  public static final RecoveryCheckpoints DEFAULT =
      new RecoveryCheckpoints(true, Duration.ZERO, 0.05);

  /** No recovery checkpoints: a pool-fatal fault restarts each running loop. */
  public static final RecoveryCheckpoints OFF = new RecoveryCheckpoints(false, Duration.ZERO, 0.05);

  public RecoveryCheckpoints {
    Objects.requireNonNull(interval, "interval");
    if (interval.isNegative()) {
      throw new IllegalArgumentException("checkpoint interval must be >= 0, got " + interval);
    }
    if (!(maxOverhead > 0)) {
      throw new IllegalArgumentException("checkpoint overhead must be > 0, got " + maxOverhead);
    }
  }

  /** Whether to capture now, after {@code workSince} of step time since the previous capture. */
  boolean due(Duration workSince, double predictedSeconds) {
    return enabled
        && workSince.compareTo(interval) >= 0
        && predictedSeconds <= maxOverhead * (workSince.toNanos() / 1e9);
  }
}
