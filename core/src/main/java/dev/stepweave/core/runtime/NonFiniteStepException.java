package dev.stepweave.core.runtime;

/** A step of one request produced NaN or infinite values: that request fails, no other. */
public final class NonFiniteStepException extends RuntimeException {
  public NonFiniteStepException(String requestId, String loopId, int step) {
    super(
        "non-finite values in step "
            + (step + 1)
            + " of loop '"
            + loopId
            + "' of request "
            + requestId);
  }
}
