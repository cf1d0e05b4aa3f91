package dev.stepweave.core.runtime;

import java.time.Instant;

/** A request's deadline passed before it finished; it stopped at a step boundary. */
public final class DeadlineExceededException extends RuntimeException {
  public DeadlineExceededException(Instant deadline, String where) {
    super("deadline " + deadline + " passed " + where);
  }
}
