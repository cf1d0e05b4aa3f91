package dev.stepweave.core.card;

import java.util.List;

/** A card that failed validation; the message is one line (first problem, and how many more). */
public final class InvalidCardException extends RuntimeException {
  private final List<CardProblem> problems;

  public InvalidCardException(String where, List<CardProblem> problems) {
    super(
        where
            + ": "
            + problems.getFirst().message()
            + (problems.size() > 1 ? " (and " + (problems.size() - 1) + " more problems)" : ""));
    this.problems = List.copyOf(problems);
  }

  public List<CardProblem> problems() {
    return problems;
  }
}
