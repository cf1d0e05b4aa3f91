package dev.stepweave.core.card;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The parity obligation a card carries: the rung it is held to, the named taps a reference
 * recording compares, and the per-output tolerances (max abs error, float32 on CPU).
 */
public record ParitySpec(ConsistencyRung rung, List<String> taps, Map<String, Double> tolerances) {
  public ParitySpec {
    Objects.requireNonNull(rung, "parity rung");
    taps = List.copyOf(taps);
    tolerances = Map.copyOf(tolerances);
  }
}
