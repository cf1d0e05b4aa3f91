package dev.stepweave.tensor;

/**
 * What a backend's failure means for the pool that computes on it ({@link Backend#classify}): the
 * engine fails one request, retries it at a smaller batch, or rebuilds the whole pool.
 */
public sealed interface Fault {
  /** Why, in a few words ("CUDA_ERROR_ILLEGAL_ADDRESS from cuStreamSynchronize"). */
  String reason();

  /**
   * The device context is unusable (a sticky error: illegal address, launch failure, a lost
   * device): every later call on it fails, so the pool must be rebuilt on a new one.
   */
  record PoolFatal(String reason) implements Fault {}

  /** The device ran out of memory for this call: a smaller batch may fit. */
  record OutOfMemory(String reason) implements Fault {}

  /** The call failed for reasons of its own request (bad input, a bug on one path). */
  record RequestFatal(String reason) implements Fault {}
}
