package dev.stepweave.core.card;

import java.util.List;
import java.util.stream.Collectors;

/** A request asked for settings the card's recipe does not allow, without overriding. */
public final class RecipeRefusedException extends RuntimeException {
  private final List<RecipeSpec.RecipeMismatch> mismatches;

  public RecipeRefusedException(
      String modelId, String method, List<RecipeSpec.RecipeMismatch> mismatches) {
    super(
        "model '"
            + modelId
            + "' (recipe '"
            + method
            + "') refuses "
            + mismatches.stream().map(Object::toString).collect(Collectors.joining(", "))
            + "; override the recipe explicitly to run it anyway");
    this.mismatches = List.copyOf(mismatches);
  }

  public List<RecipeSpec.RecipeMismatch> mismatches() {
    return mismatches;
  }
}
