package dev.stepweave.training.parity;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import java.util.Comparator;
import java.util.stream.Collectors;

/** Prints a parity report's figures (the worst comparison first) for the build log. */
final class Reports {
  private Reports() {}

  static void print(ParityReport report) {
    report.comparisons().stream()
        .sorted(Comparator.comparingDouble(Comparison::relativeL2Error).reversed())
        .limit(5)
        .forEach(c -> System.out.println("worst: " + c.line()));
  }

  static String failures(ParityReport report) {
    return report.comparisons().stream()
        .filter(c -> !c.passed())
        .map(Comparison::line)
        .collect(Collectors.joining("\n"));
  }
}
