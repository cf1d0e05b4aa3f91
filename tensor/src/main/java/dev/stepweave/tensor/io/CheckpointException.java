package dev.stepweave.tensor.io;

/**
 * A checkpoint or recording that cannot be used. The message is one line that names the file and,
 * where there is one, the tensor — it is what the CLI prints.
 */
public final class CheckpointException extends RuntimeException {
  public CheckpointException(String message) {
    super(message);
  }

  public CheckpointException(String message, Throwable cause) {
    super(message, cause);
  }
}
