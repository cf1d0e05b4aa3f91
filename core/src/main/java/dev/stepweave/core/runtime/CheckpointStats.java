package dev.stepweave.core.runtime;

import java.time.Duration;

/**
 * What recovery checkpoints and checkpoint sinks have cost: captures taken, device bytes copied to
 * the host, bytes whose earlier host copy was reused instead, and the time spent copying.
 *
 * @param captures checkpoints taken after steps (recovery checkpoints and sinks)
 * @param bytesCopied F32-equivalent bytes copied from the device
 * @param bytesReused F32-equivalent bytes an earlier capture had already copied
 * @param copyTime time the scheduler thread spent on copies: queueing them (a device copies while
 *     its next step computes) and waiting for the one capture per run that measures the copy rate
 */
public record CheckpointStats(
    long captures, long bytesCopied, long bytesReused, Duration copyTime) {
  public static final CheckpointStats NONE = new CheckpointStats(0, 0, 0, Duration.ZERO);

  public CheckpointStats plus(CheckpointStats o) {
    return new CheckpointStats(
        captures + o.captures,
        bytesCopied + o.bytesCopied,
        bytesReused + o.bytesReused,
        copyTime.plus(o.copyTime));
  }

  public CheckpointStats minus(CheckpointStats o) {
    return new CheckpointStats(
        captures - o.captures,
        bytesCopied - o.bytesCopied,
        bytesReused - o.bytesReused,
        copyTime.minus(o.copyTime));
  }
}
