package dev.stepweave.cli.bench;

import dev.stepweave.core.runtime.EngineStats;
import java.time.Duration;
import java.util.List;

/**
 * One workload served once in one mode, on a fresh engine.
 *
 * @param mode how it was served
 * @param wall first submission to last result
 * @param latencies per request, in workload order: its submission to its result
 * @param outputs per request, in workload order: the decoded pixels (image or video frames)
 * @param stats the engine's statistics after the last request
 */
public record RunResult(
    ServingMode mode,
    Duration wall,
    List<Duration> latencies,
    List<float[]> outputs,
    EngineStats stats) {
  public RunResult {
    latencies = List.copyOf(latencies);
    outputs = List.copyOf(outputs);
  }
}
