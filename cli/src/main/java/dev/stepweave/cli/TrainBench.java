package dev.stepweave.cli;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.io.Folders;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.run.TrainConfig;
import dev.stepweave.training.run.TrainConfigException;
import dev.stepweave.training.run.TrainConfigReader;
import dev.stepweave.training.run.TrainingRun;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code stepweave bench train --config FILE}: the optimiser steps of {@code stepweave train} on a
 * config, timed — the same run (data, method, batch, micro-batches, forward, backward, AdamW), into
 * a scratch folder that is deleted afterwards.
 */
@Command(
    name = "train",
    mixinStandardHelpOptions = true,
    description = {
      "Times the optimiser steps of `stepweave train` on a config (the same run, into a scratch"
          + " folder deleted afterwards): --warmup steps untimed, then --steps timed. Prints the"
          + " median and fastest step, samples per second and the process's peak resident"
          + " memory as a markdown table. Training runs on the CPU unless --backend names"
          + " another (docs/training.md).",
      ""
    })
final class TrainBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @picocli.CommandLine.Mixin BackendOption backendOption;

  @Option(
      names = "--config",
      required = true,
      paramLabel = "FILE",
      description = "A `stepweave train` config (.yaml/.yml or .json).")
  Path configFile;

  @Option(
      names = "--steps",
      defaultValue = "5",
      paramLabel = "N",
      description = "Optimiser steps timed (default: ${DEFAULT-VALUE}).")
  int steps;

  @Option(
      names = "--warmup",
      defaultValue = "1",
      paramLabel = "W",
      description = "Optimiser steps run first and not timed (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Override
  public Integer call() throws Exception {
    CommandLine cli = spec.commandLine();
    if (steps < 1) {
      throw new CommandLine.ParameterException(cli, "--steps must be at least 1, got " + steps);
    }
    if (warmup < 0) {
      throw new CommandLine.ParameterException(cli, "--warmup must be at least 0, got " + warmup);
    }
    TrainConfig config;
    try {
      config = TrainConfigReader.read(configFile);
    } catch (TrainConfigException e) {
      throw new CommandLine.ParameterException(cli, e.getMessage());
    }
    if (warmup + steps > config.steps()) {
      throw new CommandLine.ParameterException(
          cli,
          "--warmup "
              + warmup
              + " and --steps "
              + steps
              + " need "
              + (warmup + steps)
              + " steps, but the config "
              + configFile
              + " has "
              + config.steps());
    }
    PrintWriter err = cli.getErr();
    Path scratch = Files.createTempDirectory("stepweave-bench-train");
    Timings timings = new Timings(err);
    Backend compute = backendOption.openForTraining(spec, err, config.precision());
    try {
      TrainingRun.run(
          config.withOutput(scratch.resolve("run")),
          false,
          new MediaClips(),
          timings,
          warmup + steps,
          compute);
    } catch (TrainConfigException e) {
      throw new CommandLine.ParameterException(cli, e.getMessage());
    } finally {
      Folders.deleteTree(scratch);
    }
    print(cli.getOut(), config, compute, timings.seconds.subList(warmup, warmup + steps));
    return StepweaveCli.ExitCodes.OK;
  }

  private void print(PrintWriter out, TrainConfig config, Backend compute, List<Double> timed) {
    double median = GenerateBench.median(timed);
    OptionalLong peak = peakResidentBytes();
    out.printf(
        Locale.ROOT,
        "bench train on %s (%d cores, Java %s): %s%n",
        compute.device().kind() == Device.Kind.CPU ? "the CPU" : compute.name(),
        Runtime.getRuntime().availableProcessors(),
        Runtime.version().feature(),
        configFile);
    out.println(
        "| what | batch (micro-batches) | median step | fastest step | samples/s | peak resident"
            + " memory |");
    out.println("|---|---|---|---|---|---|");
    out.printf(
        Locale.ROOT,
        "| %s, %s | %d (%d) | %.3f s | %.3f s | %.2f | %s |%n",
        config.component().folder(),
        config.method().name(),
        config.batch(),
        config.batch() / config.microBatch(),
        median,
        timed.stream().mapToDouble(Double::doubleValue).min().orElseThrow(),
        config.batch() / median,
        peak.isPresent() ? String.format(Locale.ROOT, "%.2f GB", peak.getAsLong() / 1e9) : "–");
    out.printf(
        Locale.ROOT,
        "(%d steps timed after %d untimed; a step is the batch's forwards, backwards and one AdamW"
            + " update)%n",
        timed.size(),
        warmup);
  }

  /** The process's peak resident set (Linux's VmHWM), if the system says. */
  private static OptionalLong peakResidentBytes() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("VmHWM:")) {
          String[] parts = line.substring(6).trim().split("\\s+");
          return OptionalLong.of(Long.parseLong(parts[0]) * 1024);
        }
      }
    } catch (IOException | RuntimeException e) {
      // Not Linux, or not readable: no figure.
    }
    return OptionalLong.empty();
  }

  /** Each step's seconds; the run's notes on stderr. */
  private static final class Timings implements TrainingRun.Listener {
    private final PrintWriter err;
    private final List<Double> seconds = new ArrayList<>();

    Timings(PrintWriter err) {
      this.err = err;
    }

    @Override
    public void note(String message) {
      err.println(message);
      err.flush();
    }

    @Override
    public void step(Optimiser.Step step, int totalSteps, double stepSeconds) {
      seconds.add(stepSeconds);
    }
  }
}
