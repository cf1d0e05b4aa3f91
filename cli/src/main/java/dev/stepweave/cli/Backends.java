package dev.stepweave.cli;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.io.PrintWriter;
import java.util.Locale;

/** Chooses the compute backend named on the command line. */
final class Backends {
  private Backends() {}

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
