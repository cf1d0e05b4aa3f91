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
}
