package dev.stepweave.core.cache;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * A byte-budgeted, reference-counted cache of computed features (text embeddings), looked up only
 * through a {@link CacheKey}. An entry a running loop holds (an open {@link Lease}) is never
 * evicted; the budget is enforced over the others, so the cache may run over it while leases pin
 * more than it allows. Concurrent acquisitions of one key compute it once. Seeing a newer weights
 * version of a component drops that component's older entries; different adapter sets are different
 * keys, so they partition the cache instead of flushing it.
 *
 * @param <V> the cached value
 */
public final class FeatureCache<V> {
  private final long budgetBytes;
  private final ToLongFunction<V> sizer;
  private final Map<CacheKey, Entry<V>> entries;
  private final Map<String, String> currentWeights = new HashMap<>();
  private long bytes;
  private long hits;
  private long misses;
  private long evictions;
  private long invalidations;

  /**
   * @param budgetBytes bytes the unpinned entries may occupy
   * @param policy which unreferenced entry goes first
   * @param sizer the bytes of a value
   */
  public FeatureCache(long budgetBytes, EvictionPolicy policy, ToLongFunction<V> sizer) {
    if (budgetBytes < 0) {
      throw new IllegalArgumentException("cache budget must be >= 0 bytes, got " + budgetBytes);
    }
    this.budgetBytes = budgetBytes;
    this.sizer = sizer;
    this.entries = new LinkedHashMap<>(16, 0.75f, policy == EvictionPolicy.LRU);
  }

  /**
   * The value for {@code key}, computing it on a miss. Hold the lease while the value is in use and
   * close it afterwards.
   */
  public Lease<V> acquire(CacheKey key, Supplier<V> compute) {
    Entry<V> entry;
    boolean owner = false;
    synchronized (this) {
      supersedeOlderWeights(key);
      entry = entries.get(key);
      if (entry == null) {
        entry = new Entry<>(key);
        entries.put(key, entry);
        owner = true;
        misses++;
      } else {
        hits++;
      }
      entry.refs++;
    }
    if (owner) {
      try {
        V value = compute.get();
        synchronized (this) {
          entry.bytes = sizer.applyAsLong(value);
          if (entries.get(key) == entry) {
            bytes += entry.bytes;
          }
        }
        entry.value.complete(value);
      } catch (RuntimeException | Error e) {
        synchronized (this) {
          entries.remove(key, entry);
          entry.refs--;
        }
        entry.value.completeExceptionally(e);
        throw e;
      }
      synchronized (this) {
        evictOverBudget();
      }
      return new Lease<>(this, entry, false);
    }
    try {
      entry.value.join(); // wait for a computation of the same key already running
      return new Lease<>(this, entry, true);
    } catch (CompletionException e) {
      release(entry);
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
  }

  /** Drops every unpinned entry the predicate selects; pinned ones are dropped on release. */
  public synchronized void invalidate(Predicate<CacheKey> which) {
    List<Entry<V>> dropped = new ArrayList<>();
    for (Entry<V> e : entries.values()) {
      if (which.test(e.key)) {
        dropped.add(e);
      }
    }
    for (Entry<V> e : dropped) {
      entries.remove(e.key);
      bytes -= e.value.isDone() ? e.bytes : 0;
      invalidations++;
    }
  }

  public synchronized CacheMetrics metrics() {
    return new CacheMetrics(
        hits, misses, evictions, invalidations, entries.size(), bytes, budgetBytes);
  }

  /** A newer weights version of a component makes every entry of an older one stale. */
  private void supersedeOlderWeights(CacheKey key) {
    String previous = currentWeights.put(key.lineage(), key.weightsVersion());
    if (previous != null && !previous.equals(key.weightsVersion())) {
      invalidate(
          k ->
              k.lineage().equals(key.lineage())
                  && !k.weightsVersion().equals(key.weightsVersion()));
    }
  }

  private synchronized void release(Entry<V> entry) {
    entry.refs--;
    evictOverBudget();
  }

  private void evictOverBudget() {
    Iterator<Entry<V>> it = entries.values().iterator();
    while (bytes > budgetBytes && it.hasNext()) {
      Entry<V> e = it.next();
      if (e.refs == 0 && e.value.isDone()) {
        it.remove();
        bytes -= e.bytes;
        evictions++;
      }
    }
  }

  private static final class Entry<V> {
    final CacheKey key;
    final CompletableFuture<V> value = new CompletableFuture<>();
    int refs;
    long bytes;

    Entry(CacheKey key) {
      this.key = key;
    }
  }

  /** A held reference to a cached value; the entry cannot be evicted until it is closed. */
  public static final class Lease<V> implements AutoCloseable {
    private final FeatureCache<V> cache;
    private final Entry<V> entry;
    private final boolean hit;
    private boolean closed;

    private Lease(FeatureCache<V> cache, Entry<V> entry, boolean hit) {
      this.cache = cache;
      this.entry = entry;
      this.hit = hit;
    }

    public V value() {
      return entry.value.join();
    }

    /** Whether the value came from the cache rather than this acquisition's computation. */
    public boolean hit() {
      return hit;
    }

    public CacheKey key() {
      return entry.key;
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        cache.release(entry);
      }
    }
  }
}
