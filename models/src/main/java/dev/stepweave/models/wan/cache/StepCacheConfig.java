package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.ActivePlugin;

/**
 * One request's step-cache settings (see {@link StepCachePlugin}).
 *
 * @param maxCachedSteps -1 for no limit
 * @param maxConsecutiveCachedSteps -1 for no limit
 */
public record StepCacheConfig(
    String pluginId,
    double threshold,
    int warmupSteps,
    int maxCachedSteps,
    int maxConsecutiveCachedSteps,
    int taylorSeerOrder) {

  static StepCacheConfig of(ActivePlugin active) {
    var p = active.params();
    return new StepCacheConfig(
        active.id(),
        p.number("threshold"),
        p.integer("warmup_steps"),
        p.integer("max_cached_steps"),
        p.integer("max_consecutive_cached_steps"),
        p.integer("taylorseer_order"));
  }
}
