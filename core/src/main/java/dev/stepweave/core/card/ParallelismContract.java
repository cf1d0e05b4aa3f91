package dev.stepweave.core.card;

import java.util.Set;

/**
 * How the card may be spread over devices.
 *
 * @param axes the parallel axes the model supports ("sequence", "cfg")
 * @param maxSequenceParallel the largest sequence-parallel degree (attention heads bound it)
 */
public record ParallelismContract(Set<String> axes, int maxSequenceParallel) {
  public ParallelismContract {
    axes = Set.copyOf(axes);
    if (maxSequenceParallel < 1) {
      throw new IllegalArgumentException("maxSequenceParallel must be >= 1");
    }
  }

  public static ParallelismContract single() {
    return new ParallelismContract(Set.of(), 1);
  }
}
