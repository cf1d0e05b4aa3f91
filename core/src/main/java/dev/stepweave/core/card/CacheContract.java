package dev.stepweave.core.card;

import java.util.Objects;

/**
 * A cache the card allows.
 *
 * @param id the cache's name ("text_embedding", "dbcache")
 * @param kind what it stores ("feature", "residual", "step")
 * @param distributionAltering whether reuse changes the output distribution (skipping caches)
 */
public record CacheContract(String id, String kind, boolean distributionAltering) {
  public CacheContract {
    Objects.requireNonNull(id, "cache id");
    Objects.requireNonNull(kind, "cache kind");
  }

  /** A cache whose reuse returns what computing would (a feature cache keyed by its inputs). */
  public static CacheContract exact(String id, String kind) {
    return new CacheContract(id, kind, false);
  }

  /** A cache whose reuse changes the output distribution (block and step skipping). */
  public static CacheContract distributionAltering(String id, String kind) {
    return new CacheContract(id, kind, true);
  }
}
