package dev.stepweave.cli.bench;

import dev.stepweave.core.card.WorkKind;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;

/** Prints the comparison as a markdown table, then one summary line per mix. */
public final class BenchReport {
  private BenchReport() {}

  public static void print(PrintWriter out, List<MixComparison> mixes) {
    out.println(
        "| mix | serving | requests (images/videos) × rounds | wall per round (s)"
            + " | throughput (req/s) | p50 latency (s) | p95 latency (s) | DiT calls per round"
            + " | mean DiT batch | DiT / text encoder / VAE (s per round) |");
    out.println("|---|---|---|---|---|---|---|---|---|---|");
    for (MixComparison m : mixes) {
      row(out, m.workload(), m.serial());
      row(out, m.workload(), m.batched());
    }
    out.println();
    for (MixComparison m : mixes) {
      out.printf(
          Locale.ROOT,
          "%s: batching gives %.2fx the throughput, %.2fx the p50 latency, %.2fx the p95;"
              + " batches by size (all kinds) %s; outputs bit-identical %d/%d%n",
          m.workload().mix().label(),
          m.throughputGain(),
          m.batched().latencyPercentile(0.5) / m.serial().latencyPercentile(0.5),
          m.batched().latencyPercentile(0.95) / m.serial().latencyPercentile(0.95),
          m.batched().batchSizeHistogram(),
          m.identicalOutputs(),
          m.workload().requests().size());
    }
    out.flush();
  }

  private static void row(PrintWriter out, Workload w, ModeSummary s) {
    int n = w.requests().size();
    long images = w.imageCount();
    double ditCalls = s.callsPerRound(WorkKind.DIFFUSION_STEP);
    out.printf(
        Locale.ROOT,
        "| %s | %s | %d (%d/%d) × %d | %.2f | %.2f | %.2f | %.2f | %.0f | %.2f | %.2f / %.2f / %.2f"
            + " |%n",
        w.mix().label(),
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
        s.secondsPerRound(WorkKind.DIFFUSION_STEP),
        s.secondsPerRound(WorkKind.ENCODER_CHUNK),
        s.secondsPerRound(WorkKind.VAE_TILE));
  }
}
