package dev.stepweave.core.request;

/** Thrown out of a loop driver when its cancel scope was cancelled at a step boundary. */
public final class CancelledException extends RuntimeException {
  private final String loopId;
  private final int stepsDone;

  public CancelledException(String loopId, int stepsDone) {
    super("cancelled in loop '" + loopId + "' after " + stepsDone + " steps");
    this.loopId = loopId;
    this.stepsDone = stepsDone;
  }

  public String loopId() {
    return loopId;
  }

  public int stepsDone() {
    return stepsDone;
  }
}
