package dev.stepweave.core.runtime;

import dev.stepweave.core.card.WorkKind;
import java.util.Map;

/**
 * A snapshot of what an engine is doing, for metrics and health: what the server exports at {@code
 * /metrics}.
 *
 * @param queued requests waiting for admission
 * @param runningLoops loops admitted and not finished
 * @param admitted requests admitted since start
 * @param rejected requests refused at submission (bad input, recipe) or by admission (would never
 *     fit the pool)
 * @param completed requests completed
 * @param failed requests failed
 * @param cancelled requests cancelled
 * @param stepSeconds measured step latency per work kind
 * @param batchSizes work units per executed batch
 * @param costPredictionError |predicted − measured| / measured of the cost model, per executed
 *     batch
 * @param checkpoints what recovery checkpoints and checkpoint sinks have cost
 * @param componentSwitchSeconds measured time of each switch between the model's swapped components
 *     (one asleep, another awake), between calls; its count is the number of switches
 * @param accepting whether new requests are admitted (false while draining or re-initialising)
 */
public record EngineStats(
    int queued,
    int runningLoops,
    long admitted,
    long rejected,
    long completed,
    long failed,
    long cancelled,
    Map<WorkKind, Histogram> stepSeconds,
    Histogram batchSizes,
    Histogram costPredictionError,
    CheckpointStats checkpoints,
    Histogram componentSwitchSeconds,
    boolean accepting) {
  public EngineStats {
    stepSeconds = Map.copyOf(stepSeconds);
  }
}
