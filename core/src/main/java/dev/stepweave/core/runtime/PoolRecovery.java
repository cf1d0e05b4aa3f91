package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.ModelInstance;

/** Brings a pool back after a pool-fatal fault: a fresh (or reset) instance to resume on. */
@FunctionalInterface
public interface PoolRecovery {
  /**
   * @param broken the instance the fault happened on
   * @param cause the fault
   * @return the instance running requests resume on (it must serve the same card)
   */
  ModelInstance reinitialise(ModelInstance broken, Throwable cause);

  /** For a pool whose device state needs no reset (the CPU backend). */
  PoolRecovery SAME_INSTANCE = (broken, cause) -> broken;
}
