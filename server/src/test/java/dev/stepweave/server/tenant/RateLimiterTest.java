package dev.stepweave.server.tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RateLimiterTest {
  private final AtomicLong now = new AtomicLong();
  private final RateLimiter limiter = new RateLimiter(2, 3, now::get); // 2/s, burst 3

  @Test
  void aBurstThenTheRateWithTheWaitInWholeSeconds() {
    for (int i = 0; i < 3; i++) {
      assertEquals(OptionalLong.empty(), limiter.acquire("a"));
    }
    assertEquals(OptionalLong.of(1), limiter.acquire("a")); // 0.5 s to a token, told 1
    now.addAndGet(400_000_000L); // 0.8 tokens
    assertEquals(OptionalLong.of(1), limiter.acquire("a"));
    now.addAndGet(100_000_000L); // 1.0 token
    assertEquals(OptionalLong.empty(), limiter.acquire("a"));
    assertEquals(OptionalLong.empty(), limiter.acquire("b"), "each tenant has its own bucket");
  }

  @Test
  void aSlowRateWaitsLonger() {
    RateLimiter slow = new RateLimiter(0.1, 1, now::get);
    assertEquals(OptionalLong.empty(), slow.acquire("a"));
    assertEquals(OptionalLong.of(10), slow.acquire("a"));
    now.addAndGet(10_000_000_000L);
    assertEquals(OptionalLong.empty(), slow.acquire("a"));
  }

  @Test
  void theBucketNeverHoldsMoreThanItsBurst() {
    now.addAndGet(3600_000_000_000L);
    for (int i = 0; i < 3; i++) {
      assertEquals(OptionalLong.empty(), limiter.acquire("a"));
    }
    assertEquals(OptionalLong.of(1), limiter.acquire("a"));
  }

  @Test
  void aRateMustBePositive() {
    assertThrows(IllegalArgumentException.class, () -> new RateLimiter(0, 1));
    assertThrows(IllegalArgumentException.class, () -> new RateLimiter(1, 0));
  }
}
