package dev.stepweave.core.parity;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The outcome of comparing a run against a reference recording, in the order the run produced its
 * outputs, so the first failing entry is the first divergence.
 */
public final class ParityReport {
  private final List<Comparison> comparisons = new ArrayList<>();
  private final List<String> errors = new ArrayList<>();

  public void add(Comparison c) {
    comparisons.add(c);
  }

  /** A recording that could not be checked at all (unreadable, model failed): a failure. */
  public void error(String message) {
    errors.add(message);
  }

  public List<Comparison> comparisons() {
    return List.copyOf(comparisons);
  }

  public List<String> errors() {
    return List.copyOf(errors);
  }

  public boolean passed() {
    return errors.isEmpty()
        && !comparisons.isEmpty()
        && comparisons.stream().allMatch(Comparison::passed);
  }

  /** The first output or tap, in run order, that is out of tolerance. */
  public Optional<Comparison> firstDivergence() {
    return comparisons.stream().filter(c -> !c.passed()).findFirst();
  }
}
