package dev.stepweave.cli;

import dev.stepweave.cli.bench.Arrivals;
import dev.stepweave.cli.bench.BenchReport;
import dev.stepweave.cli.bench.LoadComparison;
import dev.stepweave.cli.bench.OutputCheck;
import dev.stepweave.cli.bench.OutputReference;
import dev.stepweave.cli.bench.ServingMode;
import dev.stepweave.cli.bench.ServingRun;
import dev.stepweave.cli.bench.Traffic;
import dev.stepweave.cli.bench.Workload;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Precision;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code stepweave bench}: measurements that are not tests. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = "Benchmarks (not part of the test suite).",
    subcommands = {BenchCommand.Serve.class, GenerateBench.class, TrainBench.class})
final class BenchCommand {

  /** {@code stepweave bench serve}: three ways of serving the same workloads, compared. */
  @Command(
      name = "serve",
      mixinStandardHelpOptions = true,
      description = {
        "Serves the same deterministic workloads three ways on one model, in one run: one request"
            + " at a time; request-level batching (on an idle engine, waiting requests of one"
            + " shape start together and run to the end, later arrivals wait); and the engine's"
            + " step-level batching across requests. Requests arrive all at t=0, from a closed"
            + " loop of clients (--concurrency), or as Poisson processes (--rates). Prints"
            + " throughput, p50/p95 latency (arrival to result) and the batch sizes as a markdown"
            + " table, and checks every request's output against its one-at-a-time output: bit"
            + " for bit on the CPU, within relative L2 0.01 on a device (exit 1 if not).",
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
        names = "--workload",
        defaultValue = "image-heavy,video-heavy",
        paramLabel = "W[,W…]",
        description =
            "Workloads, comma-separated (default: ${DEFAULT-VALUE}): image-heavy, video-heavy"
                + " (64-pixel frames, for the embedded model), images-480p (832x480),"
                + " images-1024 (1024x1024), video-256x33 (256x256, 33 frames), video-480p"
                + " (832x480, 81 frames) or mixed (those four together).")
    String workload;

    @Option(
        names = "--requests",
        defaultValue = "16",
        paramLabel = "N",
        description = "Requests per workload (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(
        names = "--rates",
        paramLabel = "R[,R…]",
        description =
            "Open loop: requests arrive as a Poisson process at each of these rates (requests/s,"
                + " comma-separated), each rate a row of its own; latency counts from the"
                + " scheduled arrival. Not with --concurrency.")
    String rates;

    @Option(
        names = "--concurrency",
        paramLabel = "C",
        description =
            "Closed loop: requests outstanding at once; a finished one lets the next in (default:"
                + " all, arriving at t=0).")
    Integer concurrency;

    @Option(
        names = "--seed",
        defaultValue = "42",
        paramLabel = "S",
        description =
            "Seed of the workloads (prompts, seeds, sizes, steps) and of the arrivals (default:"
                + " ${DEFAULT-VALUE}).")
    long seed;

    @Option(
        names = "--warmup",
        defaultValue = "8",
        paramLabel = "K",
        description =
            "Uncounted requests of each workload served one at a time and with step-level"
                + " batching first, to warm the JVM and the device (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(
        names = "--rounds",
        defaultValue = "3",
        paramLabel = "R",
        description =
            "Times each workload is served at each load in each mode, rotating which mode goes"
                + " first, pooled (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(
        names = "--max-batch",
        defaultValue = "8",
        paramLabel = "B",
        description =
            "Requests running at once, and units per transformer call, of the two batching modes"
                + " (default: ${DEFAULT-VALUE}).")
    int maxBatch;

    @picocli.CommandLine.Mixin BackendOption backendOption;

    @picocli.CommandLine.Mixin DeviceBudget deviceBudget;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      List<Traffic> traffics;
      List<Arrivals> loads;
      try { // every option checked before anything slow starts
        traffics = parseWorkloads(workload);
        loads = loads();
        deviceBudget.check();
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), e.getMessage());
      }
      Path dir = model != null ? model : EmbeddedWan.ensure();
      try (WanModel wan =
          WanModel.load(dir, backendOption.open(err, Precision.BF16), deviceBudget.loadOptions())) {
        EngineConfig base = deviceBudget.apply(EngineConfig.defaults(), wan, err);
        ServingRun runner = new ServingRun(wan, base, maxBatch);
        OutputCheck check = OutputCheck.forBackend(wan.backend());
        out.printf(
            Locale.ROOT,
            "model %s on %s; %d requests per workload × %d rounds in each of %d modes; arrivals"
                + " %s; seed %d; %d warm-up requests per workload; batches of up to %d"
                + " requests; outputs must be %s%n",
            wan.card().modelId(),
            wan.backend().name(),
            requests,
            rounds,
            ServingMode.values().length,
            loads.stream().map(l -> l.label(requests)).collect(Collectors.joining(", ")),
            seed,
            warmup,
            maxBatch,
            check.describe());
        double loadBefore = loadAverage();
        List<LoadComparison> results = new ArrayList<>();
        for (Traffic t : traffics) {
          warmUp(runner, t);
          Workload w = Workload.generate(t, requests, seed, t.cliName());
          OutputReference reference = new OutputReference();
          for (Arrivals load : loads) {
            long t0 = System.nanoTime();
            results.add(LoadComparison.measure(runner, w, load, rounds, reference));
            err.printf(
                Locale.ROOT,
                "served %s at %s, every mode: %.1f s%n",
                t.cliName(),
                load.label(requests),
                (System.nanoTime() - t0) / 1e9);
            err.flush();
          }
        }
        out.printf(
            Locale.ROOT,
            "machine: %d cores (%s %s); load average (1 min) %.2f at start, %.2f at end%n%n",
            Runtime.getRuntime().availableProcessors(),
            System.getProperty("os.name"),
            System.getProperty("os.arch"),
            loadBefore,
            loadAverage());
        BenchReport.print(out, results, check);
        if (!results.stream().allMatch(c -> c.allAccepted(check))) {
          err.println(
              "stepweave: outputs fail the check against their one-at-a-time outputs ("
                  + check.describe()
                  + ")");
          err.flush();
          return StepweaveCli.ExitCodes.FAILURE;
        }
        return StepweaveCli.ExitCodes.OK;
      }
    }

    /** Serves {@code warmup} other requests of the traffic one at a time and batched, uncounted. */
    private void warmUp(ServingRun runner, Traffic traffic) throws InterruptedException {
      if (warmup == 0) {
        return;
      }
      List<Request> w = Workload.generate(traffic, warmup, ~seed, "warmup").requests();
      OutputReference reference = new OutputReference();
      for (ServingMode mode : List.of(ServingMode.SERIAL, ServingMode.STEP_LEVEL)) {
        runner.serve(mode, w, new Arrivals.ClosedLoop(warmup), reference);
      }
    }

    /** The offered loads the options ask for, after checking every count. */
    private List<Arrivals> loads() {
      if (requests < 1 || rounds < 1 || warmup < 0 || maxBatch < 1) {
        throw new IllegalArgumentException(
            "--requests, --rounds and --max-batch must be >= 1 and --warmup >= 0");
      }
      if (rates == null) {
        int clients = concurrency != null ? concurrency : requests;
        if (clients < 1) {
          throw new IllegalArgumentException("--concurrency must be >= 1, got " + clients);
        }
        return List.of(new Arrivals.ClosedLoop(clients));
      }
      if (concurrency != null) {
        throw new IllegalArgumentException(
            "--rates (an open loop) and --concurrency (a closed loop) exclude each other");
      }
      List<Arrivals> loads = new ArrayList<>();
      for (String r : rates.split(",", -1)) {
        loads.add(new Arrivals.Poisson(rate(r), seed));
      }
      return loads;
    }

    private static double rate(String text) {
      double r;
      try {
        r = Double.parseDouble(text.strip());
      } catch (NumberFormatException e) {
        r = Double.NaN;
      }
      if (!(r > 0) || Double.isInfinite(r)) {
        throw new IllegalArgumentException(
            "--rates takes request rates > 0 per second, comma-separated (e.g. 2,4,8), got '"
                + text
                + "'");
      }
      return r;
    }

    private static List<Traffic> parseWorkloads(String names) {
      return Arrays.stream(names.split(",", -1)).map(Traffic::byName).distinct().toList();
    }

    /** The system's 1-minute load average (negative where the platform has none). */
    private static double loadAverage() {
      return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    }
  }
}
