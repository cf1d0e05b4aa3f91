package dev.stepweave.server.store;

/** The job store's database failed; the message names the operation and the database's error. */
public final class StoreException extends RuntimeException {
  public StoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
