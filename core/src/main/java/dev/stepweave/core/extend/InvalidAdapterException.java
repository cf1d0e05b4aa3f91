package dev.stepweave.core.extend;

/**
 * An adapter file the model cannot apply: an unknown key, a pickle, a rank or shape that does not
 * fit. The message is one line naming the file and the key or tensor.
 */
public final class InvalidAdapterException extends IllegalArgumentException {
  public InvalidAdapterException(String message) {
    super(message);
  }
}
