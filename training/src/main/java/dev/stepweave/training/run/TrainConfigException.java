package dev.stepweave.training.run;

/** A training config that cannot run: the message is one line naming the file and the key. */
public final class TrainConfigException extends RuntimeException {
  public TrainConfigException(String message) {
    super(message);
  }
}
