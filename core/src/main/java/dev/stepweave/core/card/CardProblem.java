package dev.stepweave.core.card;

/** One thing wrong with a model card, found before any weights load. */
public record CardProblem(Code code, String message) {

  /** The kinds of card error. */
  public enum Code {
    MISSING_FIELD,
    UNKNOWN_COMPONENT,
    UNKNOWN_LOOP,
    NO_LOOP_FOR_TASK,
    MISSING_REQUIRED_COMPONENT,
    UNSUPPORTED_PRECISION,
    RUNG_BELOW_RECIPE,
    UNREADABLE,
    UNSUPPORTED_SCHEMA,
    UNSUPPORTED_PARALLEL_PLAN
  }

  @Override
  public String toString() {
    return message;
  }
}
