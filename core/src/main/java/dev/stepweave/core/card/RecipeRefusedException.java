package dev.stepweave.core.card;

import java.util.List;
import java.util.stream.Collectors;

/** A request asked for settings the card's recipe does not allow, without overriding. */
public final class RecipeRefusedException extends RuntimeException {
  private final List<RecipeSpec.RecipeMismatch> mismatches;

  public RecipeRefusedException(
      String modelId, String method, List<RecipeSpec.RecipeMismatch> mismatches) {
    this("model '" + modelId + "'", method, mismatches, true);
  }

  private RecipeRefusedException(
      String subject, String method, List<RecipeSpec.RecipeMismatch> mismatches, boolean unused) {
    super(
        subject
            + " (recipe '"
            + method
            + "') refuses "
            + mismatches.stream().map(Object::toString).collect(Collectors.joining(", "))
            + "; override the recipe explicitly to run it anyway");
    this.mismatches = List.copyOf(mismatches);
  }

  /** An adapter's recipe refuses the request's settings. */
  public static RecipeRefusedException forAdapter(
      String adapter, String method, List<RecipeSpec.RecipeMismatch> mismatches) {
    return new RecipeRefusedException("adapter '" + adapter + "'", method, mismatches, true);
  }

  public List<RecipeSpec.RecipeMismatch> mismatches() {
    return mismatches;
  }
}
