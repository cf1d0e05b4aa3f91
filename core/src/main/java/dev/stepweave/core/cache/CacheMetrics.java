package dev.stepweave.core.cache;

/**
 * A snapshot of one cache's counters.
 *
 * @param hits acquisitions served from the cache (including ones that waited for a running
 *     computation of the same key)
 * @param misses acquisitions that computed the value
 * @param evictions entries dropped to stay within the byte budget
 * @param invalidations entries dropped because their weights version was superseded
 * @param entries entries held now
 * @param bytes bytes held now
 * @param budgetBytes the byte budget
 */
public record CacheMetrics(
    long hits,
    long misses,
    long evictions,
    long invalidations,
    int entries,
    long bytes,
    long budgetBytes) {}
