package dev.stepweave.core.runtime;

import dev.stepweave.core.card.WorkKind;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The engine's counters and histograms: written by the scheduler thread (and, for rejections, by
 * submitters), read from any thread as an {@link EngineStats}.
 */
final class EngineMetrics {
  final AtomicLong admitted = new AtomicLong();
  final AtomicLong rejected = new AtomicLong();
  final AtomicLong completed = new AtomicLong();
  final AtomicLong failed = new AtomicLong();
  final AtomicLong cancelled = new AtomicLong();
  private final Map<WorkKind, HistogramRecorder> stepSeconds = new EnumMap<>(WorkKind.class);
  private final HistogramRecorder batchSizes = new HistogramRecorder(1, 2, 4, 8, 16, 32, 64);
  private final HistogramRecorder costError = new HistogramRecorder(0.05, 0.1, 0.25, 0.5, 1, 2, 5);
  private final HistogramRecorder switchSeconds =
      new HistogramRecorder(0.1, 1, 5, 10, 20, 30, 60, 120);
  private CheckpointStats checkpoints = CheckpointStats.NONE;

  EngineMetrics() {
    for (WorkKind k : WorkKind.values()) {
      stepSeconds.put(
          k, new HistogramRecorder(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60));
    }
  }

  /** One executed call: its kind, measured time, size and the cost model's prediction. */
  void observeCall(WorkKind kind, double millis, int batchSize, double predictedMillis) {
    stepSeconds.get(kind).observe(millis / 1000);
    batchSizes.observe(batchSize);
    if (millis > 0) {
      costError.observe(Math.abs(predictedMillis - millis) / millis);
    }
  }

  /** One switch between swapped components, with its measured time. */
  void observeSwitch(double seconds) {
    switchSeconds.observe(seconds);
  }

  /** What the checkpoints of one step cost (scheduler thread). */
  synchronized void addCheckpoints(CheckpointStats step) {
    checkpoints = checkpoints.plus(step);
  }

  EngineStats stats(int queued, int running, boolean accepting) {
    Map<WorkKind, Histogram> steps = new EnumMap<>(WorkKind.class);
    stepSeconds.forEach((k, h) -> steps.put(k, h.snapshot()));
    return new EngineStats(
        queued,
        running,
        admitted.get(),
        rejected.get(),
        completed.get(),
        failed.get(),
        cancelled.get(),
        steps,
        batchSizes.snapshot(),
        costError.snapshot(),
        checkpointsSoFar(),
        switchSeconds.snapshot(),
        accepting);
  }

  private synchronized CheckpointStats checkpointsSoFar() {
    return checkpoints;
  }
}
