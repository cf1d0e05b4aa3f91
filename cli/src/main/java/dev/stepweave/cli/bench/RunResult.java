package dev.stepweave.cli.bench;

import dev.stepweave.core.runtime.EngineStats;
import java.time.Duration;
import java.util.List;

/**
 * One workload served once in one mode, on a fresh engine.
 *
 * @param mode how it was served
 * @param wall t=0 of the arrivals to the last result
 * @param latencies per request, in workload order: its arrival to its result
 * @param deviations per request, in workload order: its pixels against its one-at-a-time pixels
 * @param stats the engine's statistics after the last request
 */
public record RunResult(
    ServingMode mode,
    Duration wall,
    List<Duration> latencies,
    List<Deviation> deviations,
    EngineStats stats) {
  public RunResult {
    latencies = List.copyOf(latencies);
    deviations = List.copyOf(deviations);
  }
}
