package dev.stepweave.core.card;

import dev.stepweave.tensor.Precision;
import java.util.Objects;

/**
 * One component of a model card.
 *
 * @param id the component's name in the card ("transformer", "vae", …)
 * @param kind its role
 * @param path its folder relative to the checkpoint root
 * @param className the implementation class the checkpoint declares (diffusers/transformers name)
 * @param precision the precision it runs in
 */
public record ComponentSpec(
    String id, ComponentKind kind, String path, String className, Precision precision) {
  public ComponentSpec {
    Objects.requireNonNull(id, "component id");
    Objects.requireNonNull(kind, "component kind");
    Objects.requireNonNull(path, "component path");
    Objects.requireNonNull(className, "component class");
    Objects.requireNonNull(precision, "component precision");
  }
}
