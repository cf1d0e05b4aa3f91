package dev.stepweave.core.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class FeatureCacheTest {
  static CacheKey key(String input) {
    return CacheKey.builder("wan", "text_encoder").inputs(Map.of("ids", input)).build();
  }

  static FeatureCache<String> cache(long budget) {
    return new FeatureCache<>(budget, EvictionPolicy.FIFO, String::length);
  }

  @Test
  void evictsTheOldestUnreferencedEntryToStayWithinBudget() {
    FeatureCache<String> c = cache(8);
    c.acquire(key("a"), () -> "aaaa").close();
    c.acquire(key("b"), () -> "bbbb").close();
    c.acquire(key("c"), () -> "cccc").close();
    CacheMetrics m = c.metrics();
    assertEquals(1, m.evictions());
    assertEquals(2, m.entries());
    assertEquals(8, m.bytes());
    assertFalse(c.acquire(key("a"), () -> "aaaa").hit(), "a was evicted first (FIFO)");
  }

  @Test
  void aHeldEntryIsNeverEvicted() {
    FeatureCache<String> c = cache(4);
    try (var held = c.acquire(key("a"), () -> "aaaa")) {
      c.acquire(key("b"), () -> "bbbb").close();
      c.acquire(key("c"), () -> "cccc").close();
      try (var again = c.acquire(key("a"), () -> "recomputed")) {
        assertTrue(again.hit(), "the held entry survived two insertions over budget");
      }
    }
    assertTrue(c.metrics().bytes() <= 4, "within budget once released: " + c.metrics());
  }

  @Test
  void lruKeepsTheRecentlyUsedEntry() {
    FeatureCache<String> c = new FeatureCache<>(8, EvictionPolicy.LRU, String::length);
    c.acquire(key("a"), () -> "aaaa").close();
    c.acquire(key("b"), () -> "bbbb").close();
    c.acquire(key("a"), () -> "aaaa").close();
    c.acquire(key("c"), () -> "cccc").close();
    assertTrue(c.acquire(key("a"), () -> "x").hit());
  }

  @Test
  void aWeightsVersionBumpInvalidatesTheComponentsEntries() {
    FeatureCache<String> c = cache(1 << 10);
    CacheKey v1 = CacheKey.builder("wan", "text_encoder").weightsVersion("1").build();
    CacheKey v1Other = CacheKey.builder("wan", "vae").weightsVersion("1").build();
    CacheKey v2 = CacheKey.builder("wan", "text_encoder").weightsVersion("2").build();
    c.acquire(v1, () -> "old").close();
    c.acquire(v1Other, () -> "vae").close();
    c.acquire(v2, () -> "new").close();
    assertEquals(1, c.metrics().invalidations());
    assertTrue(c.acquire(v1Other, () -> "x").hit(), "another component keeps its entries");
  }

  @Test
  void differentAdapterSetsPartitionInsteadOfFlushing() {
    FeatureCache<String> c = cache(1 << 10);
    CacheKey plain = CacheKey.builder("wan", "text_encoder").inputs(Map.of("ids", "p")).build();
    CacheKey lora =
        CacheKey.builder("wan", "text_encoder")
            .inputs(Map.of("ids", "p"))
            .adapters(Map.of("style", "v1"))
            .build();
    c.acquire(plain, () -> "plain").close();
    try (var l = c.acquire(lora, () -> "with lora")) {
      assertFalse(l.hit());
      assertEquals("with lora", l.value());
    }
    try (var p = c.acquire(plain, () -> "x")) {
      assertTrue(p.hit());
      assertEquals("plain", p.value());
    }
    assertEquals(0, c.metrics().invalidations());
  }

  @Test
  void concurrentAcquisitionsOfOneKeyComputeOnce() throws Exception {
    FeatureCache<String> c = cache(1 << 10);
    AtomicInteger computations = new AtomicInteger();
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<String>> results = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        results.add(
            pool.submit(
                () -> {
                  try (var lease =
                      c.acquire(
                          key("same"),
                          () -> {
                            computations.incrementAndGet();
                            awaitQuietly(release);
                            return "embedding";
                          })) {
                    return lease.value();
                  }
                }));
      }
      Thread.sleep(50);
      release.countDown();
      for (Future<String> f : results) {
        assertEquals("embedding", f.get(10, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(1, computations.get());
    assertEquals(1, c.metrics().misses());
    assertEquals(3, c.metrics().hits());
  }

  @Test
  void aFailedComputationIsNotCached() {
    FeatureCache<String> c = cache(1 << 10);
    assertThrows(
        IllegalStateException.class,
        () ->
            c.acquire(
                key("bad"),
                () -> {
                  throw new IllegalStateException("encoder failed");
                }));
    assertEquals(0, c.metrics().entries());
    assertFalse(c.acquire(key("bad"), () -> "ok").hit());
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
