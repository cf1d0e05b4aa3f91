package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.request.Artifact;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A finished request.
 *
 * @param requestId the request
 * @param artifacts its artifacts, with provenance
 * @param loopTimings wall time per loop, in run order
 * @param loopResults every loop's result (tensors handed between loops), in run order
 * @param recipeOverrides settings run against the card's recipe at the request's explicit wish
 */
public record GenerationResult(
    String requestId,
    List<Artifact> artifacts,
    Map<String, Duration> loopTimings,
    Map<String, LoopResult> loopResults,
    List<String> recipeOverrides) {
  public GenerationResult {
    artifacts = List.copyOf(artifacts);
    loopTimings = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(loopTimings));
    loopResults = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(loopResults));
    recipeOverrides = List.copyOf(recipeOverrides);
  }

  /**
   * What the request's plugins did ({@code "dbcache.skipped_blocks"} → 12), summed over its loops;
   * empty when it ran none.
   */
  public Map<String, Long> report() {
    Map<String, Long> out = new java.util.TreeMap<>();
    loopResults.values().forEach(r -> r.report().forEach((k, v) -> out.merge(k, v, Long::sum)));
    return java.util.Collections.unmodifiableMap(out);
  }

  /** The first artifact of a type. */
  public <A extends Artifact> A artifact(Class<A> type) {
    return artifacts.stream()
        .filter(type::isInstance)
        .map(type::cast)
        .findFirst()
        .orElseThrow(() -> new IllegalStateException("no " + type.getSimpleName() + " in result"));
  }
}
