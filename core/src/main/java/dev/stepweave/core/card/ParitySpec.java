package dev.stepweave.core.card;

import dev.stepweave.core.parity.Tolerance;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The parity obligation a card carries: the rung it is held to, the named taps a reference
 * recording compares, and the per-output tolerances (max abs error, float32 on CPU). It is the one
 * place the bounds live: {@code stepweave verify} and the parity tests read them from here.
 */
public record ParitySpec(ConsistencyRung rung, List<String> taps, Map<String, Double> tolerances) {
  public ParitySpec {
    Objects.requireNonNull(rung, "parity rung");
    taps = List.copyOf(taps);
    tolerances = Map.copyOf(tolerances);
  }

  /**
   * The bound on {@code output} ("dit", "frames", …).
   *
   * @throws IllegalArgumentException naming the output and the ones the card declares
   */
  public Tolerance tolerance(String output) {
    Double bound = tolerances.get(output);
    if (bound == null) {
      throw new IllegalArgumentException(
          "the card's parity spec has no tolerance for '"
              + output
              + "' (it declares "
              + new TreeSet<>(tolerances.keySet())
              + ")");
    }
    return new Tolerance.MaxAbs(bound);
  }
}
