package dev.stepweave.core.card;

import java.util.List;
import java.util.Objects;

/**
 * A loop the card can run.
 *
 * @param id the loop id ("text_encode", "denoise", "vae_decode")
 * @param kind the kind of WorkUnit each of its steps is
 * @param components the components its steps call
 */
public record LoopSpec(String id, WorkKind kind, List<String> components) {
  public LoopSpec {
    Objects.requireNonNull(id, "loop id");
    Objects.requireNonNull(kind, "loop kind");
    components = List.copyOf(components);
  }
}
