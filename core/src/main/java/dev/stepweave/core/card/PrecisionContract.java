package dev.stepweave.core.card;

import dev.stepweave.tensor.Precision;
import java.util.Objects;
import java.util.Set;

/** The precisions a card can run in, and the one it runs in unless asked otherwise. */
public record PrecisionContract(Set<Precision> supported, Precision defaultPrecision) {
  public PrecisionContract {
    supported = Set.copyOf(supported);
    Objects.requireNonNull(defaultPrecision, "default precision");
  }
}
