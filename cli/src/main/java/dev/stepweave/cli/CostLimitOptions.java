package dev.stepweave.cli;

import dev.stepweave.core.runtime.CostLimits;
import dev.stepweave.tensor.Device;
import picocli.CommandLine.Option;

/**
 * The serve options that bound what one request may cost the pool, priced at submit from the cost
 * model (docs/server.md, "Cost limits"); their defaults come from the device.
 */
final class CostLimitOptions {
  @Option(
      names = "--max-step-seconds",
      paramLabel = "SECONDS",
      description =
          "Largest predicted device time of one step (indivisible: it stalls every other job);"
              + " above it a request is refused, or runs in the jumbo class (default: 60 on the"
              + " CPU, 30 on a GPU).")
  Double maxStepSeconds;

  @Option(
      names = "--max-request-seconds",
      paramLabel = "SECONDS",
      description =
          "Largest predicted device time of a whole request (default: 3600 on the CPU, 1800 on a"
              + " GPU).")
  Double maxRequestSeconds;

  @Option(
      names = "--jumbo-class",
      description =
          "Run requests over a limit in a separate class that never shares a step with the others"
              + " (one at a time, only while no other job runs) instead of refusing them.")
  boolean jumboClass;

  /** Fails on a bad option value, before anything slow (loading the model) starts. */
  void check() {
    limits(Device.Kind.CPU);
  }

  /** The limits on {@code kind}: its defaults, with what was given. */
  CostLimits limits(Device.Kind kind) {
    CostLimits l = CostLimits.defaultsFor(kind).withJumboClass(jumboClass);
    if (maxStepSeconds != null) {
      l = l.withMaxStepSeconds(positive("--max-step-seconds", maxStepSeconds));
    }
    if (maxRequestSeconds != null) {
      l = l.withMaxRequestSeconds(positive("--max-request-seconds", maxRequestSeconds));
    }
    return l;
  }

  /** The start line: "admission: a request may cost 60 s a step and 3600 s in all (…)". */
  String describe(CostLimits l) {
    return String.format(
        java.util.Locale.ROOT,
        "admission: a request may cost %s s a step and %s s in all, as the cost model predicts;"
            + " over that it is %s",
        trim(l.maxStepSeconds()),
        trim(l.maxRequestSeconds()),
        l.jumboClass() ? "run in the jumbo class (--jumbo-class)" : "refused (400)");
  }

  private static String trim(double v) {
    return java.math.BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
  }

  private static double positive(String flag, double v) {
    if (!(v > 0) || Double.isInfinite(v)) {
      throw new IllegalArgumentException(flag + " must be a positive number of seconds, got " + v);
    }
    return v;
  }
}
