package dev.stepweave.core.runtime;

/**
 * A fault that leaves the whole pool unusable (an illegal memory access, a lost device): thrown
 * from a step, it stops admission, re-initialises the pool through {@link PoolRecovery} and resumes
 * every running request from its last checkpoint.
 */
public final class PoolFatalException extends RuntimeException {
  public PoolFatalException(String message) {
    super(message);
  }

  public PoolFatalException(String message, Throwable cause) {
    super(message, cause);
  }
}
