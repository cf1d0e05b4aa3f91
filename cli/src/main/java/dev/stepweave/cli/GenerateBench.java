package dev.stepweave.cli;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.models.wan.WanModel;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code stepweave bench generate}: the product path, timed. It takes generate's options and runs
 * exactly what generate runs — the same engine, loops, checkpoints, events and output writing — N
 * times in one process on one model load, and prints per-loop times of each run: the first run is
 * the cold one (kernel compilation, cuDNN plan choice, graph recording happen there), the others
 * are warm, and their median is the warm figure.
 *
 * <p>Two times per loop: the loop's wall time (start of its first step to its end, as generate
 * prints it) and its step time (the scheduler's measured calls of that loop's work kind, each
 * synchronised with the device, so what the device spent on it plus launch overhead).
 */
@Command(
    name = "generate",
    mixinStandardHelpOptions = true,
    description = {
      "Runs `stepweave generate` with the given options --repeat times in one process (one model"
          + " load) and prints, per run, each loop's wall and step time, the output write and the"
          + " whole run; then the warm median (runs after the first) and the time from process"
          + " start to the first output written.",
      ""
    })
final class GenerateBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin GenerationOptions generate;

  @Option(
      names = "--repeat",
      defaultValue = "3",
      paramLabel = "N",
      description = "Runs in this process, the first one cold (default: ${DEFAULT-VALUE}).")
  int repeat;

  /** One run's figures, in seconds. */
  record Run(
      Map<String, Double> loopWall, Map<WorkKind, Double> stepTime, double write, double all) {}

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (repeat < 1) {
      throw new IllegalArgumentException("--repeat must be >= 1, got " + repeat);
    }
    double toMain = sinceProcessStart();
    long planStart = System.nanoTime();
    GenerationOptions.Plan plan = generate.plan(err);
    if (plan.batch()) {
      throw new InvalidRequestException("bench generate takes one PROMPT, not --prompts");
    }
    GenerationOptions.Job job = plan.jobs().getFirst();
    long loadStart = System.nanoTime();
    try (WanModel wan = generate.load(plan);
        Engine engine = generateEngine(wan, err)) {
      Duration loadTime = Duration.ofNanos(loaded - loadStart);
      double load = loadTime.toNanos() / 1e9;
      startup =
          String.format(
              Locale.ROOT,
              "startup: process start to main %.2f s, options and backend %.2f s (backend %.2f s),"
                  + " model load %.2f s, engine (memory budget, rates probe) %.2f s",
              toMain,
              seconds(loadStart - planStart),
              plan.backendOpen().toNanos() / 1e9,
              load,
              seconds(System.nanoTime() - loaded));
      List<Run> runs = new ArrayList<>();
      List<Profiler.CallMeasurement> afterFirst = List.of();
      double firstWritten = 0;
      for (int i = 0; i < repeat; i++) {
        Request request = i == 0 ? job.request() : generate.freshRequest(wan.card(), job);
        if (i == 0) {
          GenerateCommand.printModel(out, wan, loadTime);
          GenerateCommand.printRequest(out, wan, engine, request);
          generate.imageSummary(request).ifPresent(out::println);
        }
        Map<WorkKind, Long> before = stepNanos(engine.profiler());
        long t0 = System.nanoTime();
        GenerationOptions.Job thisJob =
            new GenerationOptions.Job(1, job.entry(), job.seed(), request, job.target());
        FrameStream frames = FrameStream.forJob(thisJob);
        GenerationResult result = GenerateCommand.run(engine, request, err, frames);
        long t1 = System.nanoTime();
        generate.writeOutputs(result, thisJob, wan.samplerFor(request), frames);
        long t2 = System.nanoTime();
        if (i == 0) {
          firstWritten = sinceProcessStart();
        }
        Map<String, Double> wall = new LinkedHashMap<>();
        result.loopTimings().forEach((loop, t) -> wall.put(loop, t.toNanos() / 1e9));
        Map<WorkKind, Double> steps = new EnumMap<>(WorkKind.class);
        stepNanos(engine.profiler())
            .forEach((k, n) -> steps.put(k, seconds(n - before.getOrDefault(k, 0L))));
        runs.add(new Run(wall, steps, seconds(t2 - t1), seconds(t2 - t0)));
        if (i == 0) {
          afterFirst = engine.profiler().callMeasurements();
        }
      }
      print(out, wan, load, firstWritten, runs);
      printBareStep(out, wan, job.request(), runs);
      out.println(startup);
      printCostModel(out, engine, afterFirst);
      var cp = engine.stats().checkpoints();
      out.printf(
          Locale.ROOT,
          "recovery checkpoints: %d captures, %.1f MB copied to the host in %.3f s, %.1f MB of"
              + " earlier copies reused%n",
          cp.captures(),
          cp.bytesCopied() / 1e6,
          cp.copyTime().toNanos() / 1e9,
          cp.bytesReused() / 1e6);
      wan.backend()
          .deviceMemory()
          .ifPresent(
              m ->
                  out.printf(
                      Locale.ROOT,
                      "device memory after the last run: %.1f GB held by the allocator, %.1f GB"
                          + " free on the device%n",
                      m.allocatorBytes() / 1e9,
                      m.freeBytes() / 1e9));
      out.println("wrote " + job.target().file().toAbsolutePath());
      return StepweaveCli.ExitCodes.OK;
    }
  }

  private static void print(
      PrintWriter out, WanModel wan, double load, double firstWritten, List<Run> runs) {
    List<String> loops = List.copyOf(runs.getFirst().loopWall().keySet());
    List<WorkKind> kinds = List.copyOf(runs.getFirst().stepTime().keySet());
    out.printf(
        Locale.ROOT,
        "%nbench generate on %s (%s): model load %.2f s; process start to first output written"
            + " %.2f s%n",
        wan.backend().name(),
        wan.precision().wireName(),
        load,
        firstWritten);
    StringBuilder head = new StringBuilder("| run |");
    loops.forEach(l -> head.append(' ').append(l).append(" wall |"));
    kinds.forEach(
        k -> head.append(' ').append(k.name().toLowerCase(Locale.ROOT)).append(" steps |"));
    head.append(" write | whole run |");
    out.println(head);
    out.println(head.toString().replaceAll("[^|]", "-"));
    for (int i = 0; i < runs.size(); i++) {
      row(out, i == 0 ? "1 (cold)" : Integer.toString(i + 1), runs.get(i), loops, kinds);
    }
    if (runs.size() > 1) {
      List<Run> warm = runs.subList(1, runs.size());
      Map<String, Double> wall = new LinkedHashMap<>();
      loops.forEach(l -> wall.put(l, median(warm.stream().map(r -> r.loopWall().get(l)).toList())));
      Map<WorkKind, Double> steps = new EnumMap<>(WorkKind.class);
      kinds.forEach(
          k ->
              steps.put(
                  k, median(warm.stream().map(r -> r.stepTime().getOrDefault(k, 0.0)).toList())));
      row(
          out,
          "warm median",
          new Run(
              wall,
              steps,
              median(warm.stream().map(Run::write).toList()),
              median(warm.stream().map(Run::all).toList())),
          loops,
          kinds);
    }
    out.println("(seconds; wall = the loop's wall time, steps = its measured device calls)");
  }

  /**
   * The product's denoising step (the last run's measured calls over its steps) beside the same
   * step's transformer forwards issued by hand in this process ({@link BareStep}).
   */
  private static void printBareStep(
      PrintWriter out, WanModel wan, Request request, List<Run> runs) {
    int steps = request.params().steps();
    Double product = runs.getLast().stepTime().get(WorkKind.DIFFUSION_STEP);
    var bare = BareStep.millis(wan, request);
    if (product == null || bare.isEmpty()) {
      out.println(
          "bare step: not measured for this model (image tokens or image-condition channels)");
      return;
    }
    double productMs = product * 1e3 / steps;
    out.printf(
        Locale.ROOT,
        "bare step (%s forward%s by hand, no engine): %.1f ms; the product's step (last run):"
            + " %.1f ms, %+.1f ms%n",
        request.params().guidance() > 1 ? "two batch-1" : "one batch-1",
        request.params().guidance() > 1 ? "s" : "",
        bare.get(),
        productMs,
        productMs - bare.get());
  }

  /**
   * The cost model against what was measured: per work kind and shape, the static prediction (the
   * unit's FLOPs and bytes at the seeded device rates), the calibrated one after these runs, the
   * measured mean over every call and over the warm runs' calls (those after the first run, {@code
   * afterFirst} being the measurements then): the calibrated figure predicts a warm call.
   */
  private static void printCostModel(
      PrintWriter out, Engine engine, List<Profiler.CallMeasurement> afterFirst) {
    var model = engine.costModel();
    out.printf(
        Locale.ROOT,
        "cost model (seed %.1f TFLOP/s, %.0f GB/s): static / calibrated / measured mean ms per"
            + " call, all calls / warm runs'%n",
        model.flopsPerMilli() / 1e9,
        model.bytesPerMilli() / 1e6);
    for (Profiler.CallMeasurement m : engine.profiler().callMeasurements()) {
      Profiler.CallMeasurement first =
          afterFirst.stream()
              .filter(
                  f ->
                      f.kind() == m.kind()
                          && f.shape().equals(m.shape())
                          && f.batchSize() == m.batchSize())
              .findFirst()
              .orElse(new Profiler.CallMeasurement(m.kind(), m.shape(), m.batchSize(), 0, 0));
      long warmCalls = m.count() - first.count();
      String warm =
          warmCalls == 0
              ? "       -"
              : String.format(
                  Locale.ROOT, "%8.2f", (m.totalNanos() - first.totalNanos()) / 1e6 / warmCalls);
      model.entries().stream()
          .filter(
              e ->
                  e.key().kind() == m.kind()
                      && e.key().shape().equals(m.shape())
                      && e.key().batchSize() == m.batchSize())
          .forEach(
              e ->
                  out.printf(
                      Locale.ROOT,
                      "  %-15s x%d %10.2f / %8.2f / %8.2f / %s  (%d calls)%n",
                      m.kind().name().toLowerCase(Locale.ROOT),
                      m.batchSize(),
                      e.staticMillis(),
                      e.predictedMillis(),
                      m.totalNanos() / 1e6 / m.count(),
                      warm,
                      m.count()));
    }
  }

  private static void row(
      PrintWriter out, String name, Run r, List<String> loops, List<WorkKind> kinds) {
    StringBuilder line = new StringBuilder("| ").append(name).append(" |");
    loops.forEach(l -> line.append(String.format(Locale.ROOT, " %.2f |", r.loopWall().get(l))));
    kinds.forEach(
        k -> line.append(String.format(Locale.ROOT, " %.2f |", r.stepTime().getOrDefault(k, 0.0))));
    line.append(String.format(Locale.ROOT, " %.2f | %.2f |", r.write(), r.all()));
    out.println(line);
  }

  /** The engine profiler's summed call time per work kind. */
  private static Map<WorkKind, Long> stepNanos(Profiler profiler) {
    Map<WorkKind, Long> out = new EnumMap<>(WorkKind.class);
    for (Profiler.CallMeasurement m : profiler.callMeasurements()) {
      out.merge(m.kind(), m.totalNanos(), Long::sum);
    }
    return out;
  }

  /** The median of {@code xs} (the mean of the middle two for an even count). */
  static double median(List<Double> xs) {
    List<Double> sorted = xs.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  private static double seconds(long nanos) {
    return nanos / 1e9;
  }

  private long loaded;
  private String startup;

  /** The engine, once the model has loaded (the moment is kept for the startup breakdown). */
  private Engine generateEngine(WanModel wan, PrintWriter err) {
    loaded = System.nanoTime();
    return generate.engine(wan, err);
  }

  private static double sinceProcessStart() {
    return (System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime()) / 1e3;
  }
}
