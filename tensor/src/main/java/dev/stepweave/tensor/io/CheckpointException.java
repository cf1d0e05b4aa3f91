package dev.stepweave.tensor.io;

/**
 * A checkpoint or recording that cannot be used. The message is one line that names the file and,
 * where there is one, the tensor — it is what the CLI prints. Line breaks that arrive inside the
 * message (from a tensor name or a parser's diagnostic) are flattened to keep that promise.
 */
public final class CheckpointException extends RuntimeException {
  public CheckpointException(String message) {
    super(oneLine(message));
  }

  public CheckpointException(String message, Throwable cause) {
    super(oneLine(message), cause);
  }

  private static String oneLine(String message) {
    return message == null ? null : message.replaceAll("\\R+", " ");
  }
}
