package dev.stepweave.cli.bench;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.runtime.Histogram;
import java.time.Duration;
import java.util.List;

/**
 * Every round of one workload in one mode, pooled: throughput over the summed wall time,
 * percentiles over all latencies, counts summed.
 */
public record ModeSummary(ServingMode mode, List<RunResult> runs) {
  public ModeSummary {
    runs = List.copyOf(runs);
    if (runs.isEmpty() || runs.stream().anyMatch(r -> r.mode() != mode)) {
      throw new IllegalArgumentException("a summary needs at least one run, all in " + mode);
    }
  }

  public int requests() {
    return runs.stream().mapToInt(r -> r.latencies().size()).sum();
  }

  /** Mean wall time of one round, in seconds. */
  public double meanWallSeconds() {
    return runs.stream().mapToDouble(r -> seconds(r.wall())).sum() / runs.size();
  }

  public double requestsPerSecond() {
    return requests() / (meanWallSeconds() * runs.size());
  }

  /** Nearest-rank percentile of all latencies, in seconds: the smallest value ≥ q of them. */
  public double latencyPercentile(double q) {
    double[] sorted =
        runs.stream()
            .flatMap(r -> r.latencies().stream())
            .mapToDouble(ModeSummary::seconds)
            .sorted()
            .toArray();
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.max(rank, 1) - 1];
  }

  /** Request outputs of all rounds that {@code check} accepts against one-at-a-time outputs. */
  public long acceptedOutputs(OutputCheck check) {
    return deviations().filter(check::accepts).count();
  }

  /** The largest relative L2 of any output against its one-at-a-time output (NaN if any is). */
  public double maxRelativeL2() {
    return deviations().mapToDouble(Deviation::relativeL2).reduce(0, Math::max);
  }

  private java.util.stream.Stream<Deviation> deviations() {
    return runs.stream().flatMap(r -> r.deviations().stream());
  }

  /** Calls executed of a kind, per round (a batch is one call). */
  public double callsPerRound(WorkKind kind) {
    return runs.stream().mapToLong(r -> kindHistogram(r, kind).count()).sum()
        / (double) runs.size();
  }

  /** Seconds spent in calls of a kind, per round. */
  public double secondsPerRound(WorkKind kind) {
    return runs.stream().mapToDouble(r -> kindHistogram(r, kind).sum()).sum() / runs.size();
  }

  /**
   * Executed batches of all kinds by size, summed over rounds, as "size:count" for each non-empty
   * bucket of the engine's batch-size histogram ("3-4:5" is five batches of three or four units).
   */
  public String batchSizeHistogram() {
    double[] bounds = runs.getFirst().stats().batchSizes().upperBounds();
    long[] cumulative = new long[bounds.length];
    long count = 0;
    for (RunResult r : runs) {
      long[] c = r.stats().batchSizes().cumulativeCounts();
      for (int i = 0; i < c.length; i++) {
        cumulative[i] += c[i];
      }
      count += r.stats().batchSizes().count();
    }
    StringBuilder out = new StringBuilder();
    long below = 0;
    for (int i = 0; i < bounds.length; i++) {
      long low = i == 0 ? 1 : (long) bounds[i - 1] + 1;
      long high = (long) bounds[i];
      append(out, low == high ? Long.toString(high) : low + "-" + high, cumulative[i] - below);
      below = cumulative[i];
    }
    append(out, ">" + (long) bounds[bounds.length - 1], count - below);
    return out.toString();
  }

  private static void append(StringBuilder out, String bucket, long count) {
    if (count > 0) {
      out.append(out.isEmpty() ? "" : " ").append(bucket).append(':').append(count);
    }
  }

  private static Histogram kindHistogram(RunResult r, WorkKind kind) {
    Histogram h = r.stats().stepSeconds().get(kind);
    return h != null ? h : Histogram.empty();
  }

  static double seconds(Duration d) {
    return d.toNanos() / 1e9;
  }
}
