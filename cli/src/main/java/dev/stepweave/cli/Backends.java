package dev.stepweave.cli;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.Locale;

/** Chooses the compute backend named on the command line. */
final class Backends {
  private Backends() {}

  static Backend byName(String name) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case "cpu" -> new CpuBackend();
      default ->
          throw new IllegalArgumentException("unknown backend '" + name + "' (available: cpu)");
    };
  }
}
