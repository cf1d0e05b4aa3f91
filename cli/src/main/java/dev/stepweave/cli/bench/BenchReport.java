package dev.stepweave.cli.bench;

import static dev.stepweave.cli.bench.ServingMode.REQUEST_LEVEL;
import static dev.stepweave.cli.bench.ServingMode.SERIAL;
import static dev.stepweave.cli.bench.ServingMode.STEP_LEVEL;

import dev.stepweave.core.card.WorkKind;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;

/**
 * Prints the comparisons as a markdown table, one row per workload, offered load and mode, then one
 * summary line per workload and load.
 */
public final class BenchReport {
  private BenchReport() {}

  public static void print(PrintWriter out, List<LoadComparison> comparisons, OutputCheck check) {
    out.println(
        "| workload | offered load | serving | requests (images/videos) × rounds"
            + " | wall per round (s) | throughput (req/s) | p50 latency (s) | p95 latency (s)"
            + " | DiT calls per round | mean DiT batch (requests / rows)"
            + " | DiT / text encoder / VAE (s per round) | outputs vs one at a time |");
    out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (LoadComparison c : comparisons) {
      for (ServingMode mode : ServingMode.values()) {
        row(out, c, c.summary(mode), check);
      }
    }
    out.println();
    for (LoadComparison c : comparisons) {
      out.printf(
          Locale.ROOT,
          "%s at %s: step-level batching gives %.2fx the throughput of one at a time and %.2fx"
              + " that of request-level batching, %.2fx and %.2fx their p95 latency; batches by"
              + " size (all kinds) %s%n",
          c.workload().traffic().cliName(),
          c.load().label(c.workload().requests().size()),
          c.throughputRatio(STEP_LEVEL, SERIAL),
          c.throughputRatio(STEP_LEVEL, REQUEST_LEVEL),
          c.latencyRatio(STEP_LEVEL, SERIAL, 0.95),
          c.latencyRatio(STEP_LEVEL, REQUEST_LEVEL, 0.95),
          c.summary(STEP_LEVEL).batchSizeHistogram());
    }
    out.flush();
  }

  private static void row(PrintWriter out, LoadComparison c, ModeSummary s, OutputCheck check) {
    Workload w = c.workload();
    int n = w.requests().size();
    long images = w.imageCount();
    double ditCalls = s.callsPerRound(WorkKind.DIFFUSION_STEP);
    out.printf(
        Locale.ROOT,
        "| %s | %s | %s | %d (%d/%d) × %d | %.2f | %.2f | %.2f | %.2f | %.0f | %.2f / %.2f"
            + " | %.2f / %.2f / %.2f | %s |%n",
        w.traffic().cliName(),
        c.load().label(n),
        s.mode().label(),
        n,
        images,
        n - images,
        s.runs().size(),
        s.meanWallSeconds(),
        s.requestsPerSecond(),
        s.latencyPercentile(0.5),
        s.latencyPercentile(0.95),
        ditCalls,
        w.totalSteps() / ditCalls,
        w.totalRows() / ditCalls,
        s.secondsPerRound(WorkKind.DIFFUSION_STEP),
        s.secondsPerRound(WorkKind.ENCODER_CHUNK),
        s.secondsPerRound(WorkKind.VAE_TILE),
        outputs(s, check));
  }

  /** {@code 3/3 bit-identical}, or {@code 24/24 within relative L2 0.01 (max 2.1e-03)}. */
  private static String outputs(ModeSummary s, OutputCheck check) {
    long total = s.runs().stream().mapToLong(r -> r.deviations().size()).sum();
    String head = s.acceptedOutputs(check) + "/" + total + " " + check.describe();
    return check == OutputCheck.BIT_IDENTICAL
        ? head
        : String.format(Locale.ROOT, "%s (max %.1e)", head, s.maxRelativeL2());
  }
}
