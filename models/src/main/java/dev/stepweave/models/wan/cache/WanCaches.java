package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Plugin;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * The cache plugins the Wan loops implement, and a deployment of some of them: what a product (the
 * CLI, a server) enables before any request may name one.
 */
public final class WanCaches {
  /** Every cache plugin of the Wan loops, by id. */
  public static final SequencedMap<String, Plugin> ALL = all();

  private WanCaches() {}

  /**
   * Enables the caches {@code ids} on {@code builder}, each with the deployment's defaults from
   * {@code defaults} (plugin id → parameter → value).
   *
   * @throws IllegalArgumentException for an unknown cache, or defaults of a cache not enabled
   * @throws dev.stepweave.core.request.InvalidRequestException for a default outside its schema
   */
  public static Extensions.Builder enable(
      Extensions.Builder builder, List<String> ids, Map<String, Map<String, String>> defaults) {
    for (String id : defaults.keySet()) {
      if (!ids.contains(id)) {
        throw new IllegalArgumentException(
            "defaults for cache '" + id + "', which is not enabled (enabled: " + ids + ")");
      }
    }
    for (String id : ids) {
      Plugin plugin = ALL.get(id);
      if (plugin == null) {
        throw new IllegalArgumentException(
            "unknown cache '" + id + "' (known: " + String.join(", ", ALL.keySet()) + ")");
      }
      builder.enable(plugin, defaults.getOrDefault(id, Map.of()));
    }
    return builder;
  }

  private static SequencedMap<String, Plugin> all() {
    SequencedMap<String, Plugin> m = new LinkedHashMap<>();
    for (Plugin p :
        List.<Plugin>of(
            BlockCachePlugin.DBCACHE, BlockCachePlugin.FBCACHE, StepCachePlugin.STEPCACHE)) {
      m.put(p.id(), p);
    }
    return java.util.Collections.unmodifiableSequencedMap(m);
  }
}
