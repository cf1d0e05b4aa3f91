package dev.stepweave.core.request;

import java.util.List;
import java.util.Map;

/**
 * Where an artifact came from: enough to reproduce it and to know under which contract it was made.
 *
 * @param modelId the card's model id
 * @param recipe the card's recipe method
 * @param node the loop (program node) that produced the artifact
 * @param requestId the request
 * @param seed the seed used
 * @param settings the effective settings (sampler, steps, guidance, shift, size, …)
 * @param recipeOverrides settings the request ran against the recipe's assumptions (empty when
 *     none)
 * @param adapters the adapters the artifact was made with, in the order they were stacked
 */
public record Provenance(
    String modelId,
    String recipe,
    String node,
    String requestId,
    long seed,
    Map<String, String> settings,
    List<String> recipeOverrides,
    List<AppliedAdapter> adapters) {
  public Provenance {
    settings = Map.copyOf(settings);
    recipeOverrides = List.copyOf(recipeOverrides);
    adapters = adapters == null ? List.of() : List.copyOf(adapters);
  }

  /** A provenance without adapters. */
  public Provenance(
      String modelId,
      String recipe,
      String node,
      String requestId,
      long seed,
      Map<String, String> settings,
      List<String> recipeOverrides) {
    this(modelId, recipe, node, requestId, seed, settings, recipeOverrides, List.of());
  }

  /** The same provenance with more settings (e.g. what the request's plugins did). */
  public Provenance withSettings(Map<String, String> more) {
    Map<String, String> all = new java.util.TreeMap<>(settings);
    all.putAll(more);
    return new Provenance(modelId, recipe, node, requestId, seed, all, recipeOverrides, adapters);
  }

  /** The same provenance naming the adapters the artifact was made with. */
  public Provenance withAdapters(List<AppliedAdapter> applied) {
    return new Provenance(
        modelId, recipe, node, requestId, seed, settings, recipeOverrides, applied);
  }

  public Provenance withRecipeOverrides(List<String> overrides) {
    return new Provenance(modelId, recipe, node, requestId, seed, settings, overrides, adapters);
  }
}
