package dev.stepweave.core.runtime;

/** A request that could never be admitted on this pool (it exceeds a budget on its own). */
public final class AdmissionRejectedException extends RuntimeException {
  public AdmissionRejectedException(String message) {
    super(message);
  }
}
