package dev.stepweave.cuda.driver;

/** A CUDA library call that returned an error status; the message names the call. */
public final class CudaException extends RuntimeException {
  private final String call;
  private final int status;

  public CudaException(String call, int status, String detail) {
    super(call + " failed with status " + status + (detail == null ? "" : " (" + detail + ")"));
    this.call = call;
    this.status = status;
  }

  CudaException(String message, Throwable cause) {
    super(message, cause);
    this.call = null;
    this.status = -1;
  }

  /** The C function that failed, or null for a failure outside a call. */
  public String call() {
    return call;
  }

  public int status() {
    return status;
  }
}
