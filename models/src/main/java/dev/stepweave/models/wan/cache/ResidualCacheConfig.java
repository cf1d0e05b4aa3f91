package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.ActivePlugin;

/**
 * One request's block-cache settings (see {@link BlockCachePlugin}).
 *
 * @param maxCachedSteps -1 for no limit
 * @param maxConsecutiveCachedSteps -1 for no limit
 */
public record ResidualCacheConfig(
    String pluginId,
    int fn,
    int bn,
    double threshold,
    int warmupSteps,
    int maxCachedSteps,
    int maxConsecutiveCachedSteps,
    int taylorSeerOrder) {

  static ResidualCacheConfig of(ActivePlugin active) {
    BlockCachePlugin plugin = (BlockCachePlugin) active.plugin();
    var p = active.params();
    return new ResidualCacheConfig(
        plugin.id(),
        plugin.fixedFn() >= 0 ? plugin.fixedFn() : p.integer("fn"),
        plugin.fixedBn() >= 0 ? plugin.fixedBn() : p.integer("bn"),
        p.number("threshold"),
        p.integer("warmup_steps"),
        p.integer("max_cached_steps"),
        p.integer("max_consecutive_cached_steps"),
        p.integer("taylorseer_order"));
  }
}
