package dev.stepweave.core.runtime;

/**
 * The scheduling class a request runs in, chosen at submit from its price ({@link CostLimits}).
 * Jumbo work never shares a tick with latency-class work: a jumbo request is admitted only while no
 * latency-class request waits or runs, one at a time, and takes a step only in a tick with no
 * latency-class work, so a small request waits at most for the one jumbo step in flight when it
 * arrived.
 */
public enum CostClass {
  LATENCY,
  JUMBO;

  /** The name in the API ("latency", "jumbo"). */
  public String wire() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
