package dev.stepweave.cli;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.models.parity.RecordingVerifier;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Precision;
import dev.stepweave.training.parity.TrainingVerifier;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code stepweave verify}: the parity aligner's compare mode. */
@Command(
    name = "verify",
    mixinStandardHelpOptions = true,
    description = {
      "Runs a checkpoint's components on the inputs of a reference recording and compares every"
          + " output and tap with it.",
      "For each recording file present (dit, umt5, vae, sched_*, pipeline, torch_cpu_randn"
          + " .safetensors, and the training references dit_train, adamw_3steps, lora_train,"
          + " vae_train)"
          + " prints one line per output and tap, then the first divergence.",
      "Exits 0 only if everything is within the tolerances of the checkpoint's card (ParitySpec)."
    })
final class VerifyCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--checkpoint",
      required = true,
      paramLabel = "DIR",
      description = "A diffusers-format checkpoint directory (model_index.json).")
  Path checkpoint;

  @Option(
      names = "--reference",
      required = true,
      paramLabel = "DIR",
      description = "A directory of reference recordings in the golden format.")
  Path reference;

  @picocli.CommandLine.Mixin BackendOption backendOption;

  @Override
  public Integer call() {
    if (!Files.isDirectory(reference)) {
      throw new IllegalArgumentException("reference directory not found: " + reference);
    }
    PrintWriter out = spec.commandLine().getOut();
    Backend backend = backendOption.open(spec.commandLine().getErr(), Precision.F32);
    ParityReport serving =
        new RecordingVerifier(checkpoint, backend, out::println)
            .verify(reference, c -> out.println(c.line()), TrainingVerifier::checks);
    ParityReport training =
        new TrainingVerifier(checkpoint).verify(reference, c -> out.println(c.line()));
    ParityReport report = new ParityReport();
    for (ParityReport part : new ParityReport[] {serving, training}) {
      part.comparisons().forEach(report::add);
      part.errors().forEach(report::error);
    }
    for (String error : report.errors()) {
      out.println("ERROR " + error);
    }
    long passed = report.comparisons().stream().filter(Comparison::passed).count();
    out.printf(
        "%d of %d outputs and taps within tolerance%s%n",
        passed,
        report.comparisons().size(),
        report.errors().isEmpty() ? "" : ", " + report.errors().size() + " errors");
    report
        .firstDivergence()
        .ifPresentOrElse(
            c -> out.println("first divergence: " + c.name()),
            () -> out.println(report.passed() ? "no divergence" : "no comparisons"));
    out.flush();
    return report.passed() ? StepweaveCli.ExitCodes.OK : StepweaveCli.ExitCodes.FAILURE;
  }
}
