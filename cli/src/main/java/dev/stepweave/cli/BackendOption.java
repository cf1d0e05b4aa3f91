package dev.stepweave.cli;

import dev.stepweave.cuda.Backends;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * The {@code --backend} and {@code --precision} options every command that computes shares; {@link
 * Backends} finds out whether CUDA works.
 */
final class BackendOption {
  @picocli.CommandLine.Option(
      names = "--backend",
      defaultValue = "auto",
      paramLabel = "NAME",
      description = "Compute backend: auto (CUDA when available, else the CPU), cpu or cuda.")
  String name = "auto";

  @picocli.CommandLine.Option(
      names = "--precision",
      paramLabel = "P",
      description =
          "CUDA precision: bf16 (BF16 activations, tensor cores; the default of generate, serve"
              + " and bench) or f32 (the golden-parity mode; the default of verify). The CPU"
              + " always computes in F32.")
  String precision;

  /** The backend this option names; a CUDA one in {@code --precision} or else {@code fallback}. */
  Backend open(PrintWriter err, Precision fallback) {
    return byName(name, precision == null ? fallback : precision(precision), err);
  }

  /**
   * The backend a training run computes on: the CPU unless {@code --backend} was given (training on
   * a device is new and runs the optimiser on the host), always in F32 — the only precision the
   * training configs have.
   *
   * @throws IllegalArgumentException for {@code --precision} other than f32
   */
  Backend openForTraining(picocli.CommandLine.Model.CommandSpec spec, PrintWriter err) {
    if (precision != null && precision(precision) != Precision.F32) {
      throw new IllegalArgumentException(
          "training computes in f32: --precision " + precision + " is not supported");
    }
    boolean named = spec.commandLine().getParseResult().hasMatchedOption("--backend");
    return named ? byName(name, Precision.F32, err) : new CpuBackend();
  }

  static Precision precision(String name) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case "bf16" -> Precision.BF16;
      case "f32" -> Precision.F32;
      default ->
          throw new IllegalArgumentException(
              "unknown precision '" + name + "' (available: bf16, f32)");
    };
  }

  /**
   * {@code auto} (CUDA when it works, else the CPU after a one-line note saying why), {@code cpu},
   * or {@code cuda} (an error saying why when it is not available).
   */
  static Backend byName(String name, Precision precision, PrintWriter err) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case "auto" ->
          Backends.best(
              reason -> {
                err.println("note: " + reason + "; running on the CPU");
                err.flush();
              },
              precision);
      case "cpu" -> new CpuBackend();
      case "cuda" -> {
        Backends.Availability a = Backends.availability(precision);
        if (a.backend() == null) {
          throw new IllegalArgumentException(a.reason());
        }
        yield a.backend();
      }
      default ->
          throw new IllegalArgumentException(
              "unknown backend '" + name + "' (available: auto, cpu, cuda)");
    };
  }
}
