package dev.stepweave.cli.bench;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/** One workload at one offered load, served in every {@link ServingMode}, in the same run. */
public record LoadComparison(
    Workload workload, Arrivals load, Map<ServingMode, ModeSummary> modes) {
  public LoadComparison {
    modes = Map.copyOf(modes);
    if (modes.size() != ServingMode.values().length) {
      throw new IllegalArgumentException("a comparison needs every mode, got " + modes.keySet());
    }
  }

  /**
   * Serves the workload {@code rounds} times in each mode, each time on a fresh engine and the same
   * arrivals within a round (a fresh draw each round). Which mode goes first rotates by round so
   * that drift in the machine's load falls on all; round 0 starts one at a time, so that the first
   * serial outputs become {@code reference} before any batched run is compared.
   */
  public static LoadComparison measure(
      ServingRun runner, Workload workload, Arrivals load, int rounds, OutputReference reference)
      throws InterruptedException {
    Map<ServingMode, List<RunResult>> runs = new EnumMap<>(ServingMode.class);
    ServingMode[] modes = ServingMode.values();
    for (int round = 0; round < rounds; round++) {
      Arrivals arrivals = load.forRound(round);
      for (int k = 0; k < modes.length; k++) {
        ServingMode mode = modes[(k + round) % modes.length];
        RunResult r = runner.serve(mode, workload.requests(), arrivals, reference);
        runs.computeIfAbsent(mode, m -> new ArrayList<>()).add(r);
      }
    }
    Map<ServingMode, ModeSummary> summaries = new EnumMap<>(ServingMode.class);
    runs.forEach((mode, results) -> summaries.put(mode, new ModeSummary(mode, results)));
    return new LoadComparison(workload, load, summaries);
  }

  public ModeSummary summary(ServingMode mode) {
    return modes.get(mode);
  }

  /** Whether every output of every mode and round passes {@code check}. */
  public boolean allAccepted(OutputCheck check) {
    int outputs = workload.requests().size();
    return modes.values().stream()
        .allMatch(s -> s.acceptedOutputs(check) == (long) outputs * s.runs().size());
  }

  /** Throughput of {@code mode} over that of {@code baseline}. */
  public double throughputRatio(ServingMode mode, ServingMode baseline) {
    return summary(mode).requestsPerSecond() / summary(baseline).requestsPerSecond();
  }

  /** p-quantile latency of {@code mode} over that of {@code baseline}. */
  public double latencyRatio(ServingMode mode, ServingMode baseline, double q) {
    return summary(mode).latencyPercentile(q) / summary(baseline).latencyPercentile(q);
  }
}
