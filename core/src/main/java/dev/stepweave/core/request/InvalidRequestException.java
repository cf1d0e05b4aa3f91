package dev.stepweave.core.request;

/** A request that no model can run; the message is one line naming the bad field. */
public final class InvalidRequestException extends IllegalArgumentException {
  public InvalidRequestException(String message) {
    super(message);
  }
}
