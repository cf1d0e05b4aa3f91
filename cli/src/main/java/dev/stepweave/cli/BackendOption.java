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
   * The backend a training run computes on: the CPU unless {@code --backend} was given, in the
   * config's {@code precision} (bf16 needs a GPU: the run says so).
   *
   * @throws IllegalArgumentException for a {@code --precision} other than the config's
   */
  Backend openForTraining(
      picocli.CommandLine.Model.CommandSpec spec, PrintWriter err, Precision configured) {
    if (precision != null && precision(precision) != configured) {
      throw new IllegalArgumentException(
          "the config trains in "
              + configured.wireName()
              + ": --precision "
              + precision
              + " disagrees (set precision: in the config)");
    }
    boolean named = spec.commandLine().getParseResult().hasMatchedOption("--backend");
    return named ? byName(name, configured, err) : new CpuBackend();
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
