package dev.stepweave.cli;

import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.run.LossLog;
import dev.stepweave.training.run.TrainConfig;
import dev.stepweave.training.run.TrainConfigException;
import dev.stepweave.training.run.TrainConfigReader;
import dev.stepweave.training.run.TrainingRun;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code stepweave train --config FILE}: a training run (docs/training.md). */
@Command(
    name = "train",
    mixinStandardHelpOptions = true,
    description = {
      "Trains the transformer (flow matching, full or LoRA; few-step distillation; DiffusionNFT"
          + " post-training on a reward) or the VAE (reconstruction) of a checkpoint, as a YAML or"
          + " JSON config describes (docs/training.md lists every key), on the CPU unless"
          + " --backend names another (there flow matching, full or LoRA, and the VAE train; the rest stays"
          + " on the CPU). Writes"
          + " loss.jsonl, loss.png (an RL run also reward.png and rewards.jsonl), checkpoints"
          + " and, at the end, model/ (a diffusers checkpoint with its card) or lora/ (the"
          + " adapter in both layouts) into the config's output folder.",
      ""
    })
final class TrainCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @picocli.CommandLine.Mixin BackendOption backendOption;

  @Option(
      names = "--config",
      required = true,
      paramLabel = "FILE",
      description = "The run's config (.yaml/.yml or .json).")
  Path configFile;

  @Option(
      names = "--resume",
      description = "Continue the run in the output folder from its latest checkpoint.")
  boolean resume;

  @Override
  public Integer call() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    TrainConfig config;
    try {
      config = TrainConfigReader.read(configFile);
    } catch (TrainConfigException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
    boolean terminal = System.console() != null && System.console().isTerminal();
    Progress progress = new Progress(err, terminal, config.output());
    TrainingRun.Result result;
    try {
      result =
          TrainingRun.run(
              config,
              resume,
              new MediaClips(),
              progress,
              config.steps(),
              backendOption.openForTraining(spec, err, config.precision()));
    } catch (TrainConfigException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    } finally {
      progress.finish();
    }
    spec.commandLine()
        .getOut()
        .printf(
            "trained %d steps (from step %d); wrote %s%n",
            result.stepsDone(), result.startStep(), result.artifact().toAbsolutePath());
    return StepweaveCli.ExitCodes.OK;
  }

  /** The progress bar (loss, it/s, ETA) on stderr, and the loss plot at each checkpoint. */
  private static final class Progress implements TrainingRun.Listener {
    private static final int BAR = 24;
    private final PrintWriter err;
    private final boolean terminal;
    private final Path output;
    private int stepsSeen;
    private double stepSeconds;
    private boolean live;

    Progress(PrintWriter err, boolean terminal, Path output) {
      this.err = err;
      this.terminal = terminal;
      this.output = output;
    }

    @Override
    public void note(String message) {
      endLine();
      err.println(message);
      err.flush();
    }

    @Override
    public void step(Optimiser.Step step, int totalSteps, double seconds) {
      // The rate of the steps themselves, not of loading and encoding before them.
      stepsSeen++;
      stepSeconds += seconds;
      int done = step.index() + 1;
      double rate = stepsSeen / stepSeconds;
      double eta = (totalSteps - done) / rate;
      String text =
          String.format(
              Locale.ROOT,
              "step %d/%d  loss %.5f  lr %.2e  %.2f it/s  ETA %s",
              done,
              totalSteps,
              step.loss(),
              step.learningRate(),
              rate,
              clock(eta));
      if (terminal) {
        int filled = BAR * done / totalSteps;
        err.print("\r[" + "#".repeat(filled) + ".".repeat(BAR - filled) + "] " + text + "\u001b[K");
        live = true;
      } else if (done == totalSteps || done % Math.max(1, totalSteps / 20) == 0 || done == 1) {
        err.println(text);
      }
      err.flush();
    }

    @Override
    public void checkpointed(int step) {
      try {
        List<LossLog.Row> rows = LossLog.read(output.resolve(LossLog.FILE));
        CurvePlot.write(
            output.resolve(CurvePlot.LOSS), rows.stream().mapToDouble(LossLog.Row::loss).toArray());
        double[] rewards =
            rows.stream().mapToDouble(LossLog.Row::reward).filter(r -> !Double.isNaN(r)).toArray();
        CurvePlot.write(output.resolve(CurvePlot.REWARD), rewards);
      } catch (IOException e) {
        note("warning: cannot draw the run's curves: " + e.getMessage());
      }
    }

    void finish() {
      endLine();
    }

    private void endLine() {
      if (live) {
        err.println();
        live = false;
      }
    }

    private static String clock(double seconds) {
      Duration d = Duration.ofSeconds((long) Math.ceil(Math.max(0, seconds)));
      return String.format(
          Locale.ROOT, "%d:%02d:%02d", d.toHours(), d.toMinutesPart(), d.toSecondsPart());
    }
  }
}
