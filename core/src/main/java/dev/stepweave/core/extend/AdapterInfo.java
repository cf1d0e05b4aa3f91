package dev.stepweave.core.extend;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What a model read from an adapter file when it was registered: enough to list it and to refuse a
 * request that misuses it, without its weights in memory.
 *
 * @param format the key layout the file uses ("diffusers", "wan")
 * @param rank the largest rank of its factors
 * @param targets the layers it adapts, by the model's module names, sorted
 * @param recipe what the adapter assumes of a run, when it says (see {@link AdapterRecipe})
 */
public record AdapterInfo(
    String format, int rank, List<String> targets, Optional<AdapterRecipe> recipe) {
  public AdapterInfo {
    Objects.requireNonNull(format, "format");
    targets = List.copyOf(targets);
    recipe = recipe == null ? Optional.empty() : recipe;
  }
}
