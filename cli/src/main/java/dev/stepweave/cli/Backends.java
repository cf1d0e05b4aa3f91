package dev.stepweave.cli;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.io.PrintWriter;
import java.util.Locale;

/** The {@code --backend} option every command that computes shares, and the choice it makes. */
final class Backends {
  @picocli.CommandLine.Option(
      names = "--backend",
      defaultValue = "auto",
      paramLabel = "NAME",
      description = "Compute backend: auto (CUDA when available, else the CPU), cpu or cuda.")
  String name = "auto";

  /** The backend this option names. */
  Backend open(PrintWriter err) {
    return byName(name, err);
  }

  /**
   * {@code auto} (CUDA when it works, else the CPU after a one-line note saying why), {@code cpu},
   * or {@code cuda} (an error saying why when it is not available).
   */
  static Backend byName(String name, PrintWriter err) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case "auto" ->
          dev.stepweave.cuda.Backends.best(
              reason -> {
                err.println("note: " + reason + "; running on the CPU");
                err.flush();
              });
      case "cpu" -> new CpuBackend();
      case "cuda" -> {
        var a = dev.stepweave.cuda.Backends.availability();
        if (a.backend() == null) {
          throw new IllegalArgumentException(a.reason());
        }
        CudaBackend cuda = a.backend();
        yield cuda;
      }
      default ->
          throw new IllegalArgumentException(
              "unknown backend '" + name + "' (available: auto, cpu, cuda)");
    };
  }
}
