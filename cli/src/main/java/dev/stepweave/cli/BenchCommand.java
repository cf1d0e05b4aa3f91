package dev.stepweave.cli;

import dev.stepweave.cli.bench.BenchReport;
import dev.stepweave.cli.bench.Mix;
import dev.stepweave.cli.bench.MixComparison;
import dev.stepweave.cli.bench.ServingMode;
import dev.stepweave.cli.bench.ServingRun;
import dev.stepweave.cli.bench.Workload;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Precision;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code stepweave bench}: measurements that are not tests. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = "Benchmarks (not part of the test suite).",
    subcommands = {BenchCommand.Serve.class, GenerateBench.class})
final class BenchCommand {

  /** {@code stepweave bench serve}: step-level batching versus one request at a time. */
  @Command(
      name = "serve",
      mixinStandardHelpOptions = true,
      description = {
        "Serves the same deterministic workload twice on one model, in one run: with the engine's"
            + " step-level batching across requests, and one request at a time (one running"
            + " request, batches of one). Prints throughput, p50/p95 latency (submission to"
            + " result) and the batch sizes as a markdown table, and checks that every request's"
            + " output is bit-identical both ways (exit 1 if not).",
        ""
      })
  static final class Serve implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--model",
        paramLabel = "DIR",
        description = "A diffusers-format Wan 2.1 T2V checkpoint (default: the embedded model).")
    Path model;

    @Option(
        names = "--mix",
        defaultValue = "both",
        paramLabel = "MIX",
        description = "image (mostly one-frame images), video (mostly short videos) or both.")
    String mix;

    @Option(
        names = "--requests",
        defaultValue = "16",
        paramLabel = "N",
        description = "Requests per mix (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(
        names = "--concurrency",
        paramLabel = "C",
        description =
            "Requests outstanding at once; a finished one lets the next in (default: all,"
                + " submitted at t=0).")
    Integer concurrency;

    @Option(
        names = "--seed",
        defaultValue = "42",
        paramLabel = "S",
        description =
            "Seed of the workload: prompts, seeds, sizes, steps (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(
        names = "--warmup",
        defaultValue = "8",
        paramLabel = "K",
        description =
            "Uncounted requests served both ways first, to warm the JVM (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(
        names = "--rounds",
        defaultValue = "3",
        paramLabel = "R",
        description =
            "Times each mix is served each way, alternating which way goes first, pooled"
                + " (default: ${DEFAULT-VALUE}).")
    int rounds;

    @picocli.CommandLine.Mixin BackendOption backendOption;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      List<Mix> mixes = parseMixes(mix);
      if (requests < 1 || rounds < 1 || warmup < 0 || (concurrency != null && concurrency < 1)) {
        throw new IllegalArgumentException(
            "--requests, --rounds and --concurrency must be >= 1 and --warmup >= 0");
      }
      int clients = concurrency != null ? concurrency : requests;
      Path dir = model != null ? model : EmbeddedWan.ensure();
      try (WanModel wan = WanModel.load(dir, backendOption.open(err, Precision.BF16))) {
        out.printf(
            Locale.ROOT,
            "model %s on %s; %d requests per mix × %d rounds, %s; workload seed %d;"
                + " %d warm-up requests%n",
            wan.card().modelId(),
            wan.backend().name(),
            requests,
            rounds,
            clients >= requests ? "all submitted at t=0" : clients + " outstanding at most",
            seed,
            warmup);
        if (warmup > 0) {
          List<Request> w = Workload.generate(mixes.getFirst(), warmup, ~seed, "warmup").requests();
          ServingRun.serve(wan, ServingMode.SERIAL, w, warmup);
          ServingRun.serve(wan, ServingMode.BATCHED, w, warmup);
        }
        double loadBefore = loadAverage();
        List<MixComparison> results = new ArrayList<>();
        for (Mix m : mixes) {
          Workload w = Workload.generate(m, requests, seed, m.cliName());
          results.add(MixComparison.measure(wan, w, rounds, clients));
        }
        out.printf(
            Locale.ROOT,
            "machine: %d cores (%s %s); load average (1 min) %.2f at start, %.2f at end%n%n",
            Runtime.getRuntime().availableProcessors(),
            System.getProperty("os.name"),
            System.getProperty("os.arch"),
            loadBefore,
            loadAverage());
        BenchReport.print(out, results);
        if (!results.stream().allMatch(MixComparison::allIdentical)) {
          err.println("stepweave: batched outputs differ from one-at-a-time outputs");
          err.flush();
          return StepweaveCli.ExitCodes.FAILURE;
        }
        return StepweaveCli.ExitCodes.OK;
      }
    }

    private static List<Mix> parseMixes(String name) {
      return switch (name.toLowerCase(Locale.ROOT)) {
        case "image" -> List.of(Mix.IMAGE_HEAVY);
        case "video" -> List.of(Mix.VIDEO_HEAVY);
        case "both" -> List.of(Mix.IMAGE_HEAVY, Mix.VIDEO_HEAVY);
        default ->
            throw new IllegalArgumentException(
                "unknown mix '" + name + "' (available: image, video, both)");
      };
    }

    /** The system's 1-minute load average (negative where the platform has none). */
    private static double loadAverage() {
      return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    }
  }
}
