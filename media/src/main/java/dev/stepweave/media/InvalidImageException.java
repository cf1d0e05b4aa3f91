package dev.stepweave.media;

/** An input image that cannot be used; the message is one line naming the input and the reason. */
public final class InvalidImageException extends IllegalArgumentException {
  public InvalidImageException(String message) {
    super(message);
  }
}
