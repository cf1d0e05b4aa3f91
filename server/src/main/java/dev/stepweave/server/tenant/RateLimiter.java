package dev.stepweave.server.tenant;

import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A token bucket per tenant: {@code burst} calls at once, refilled at {@code perSecond}. A refused
 * call learns how many whole seconds until its next token, the {@code Retry-After} it is told.
 */
public final class RateLimiter {
  private final double perSecond;
  private final double burst;
  private final LongSupplier nanos;
  private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();

  public RateLimiter(double perSecond, int burst) {
    this(perSecond, burst, System::nanoTime);
  }

  RateLimiter(double perSecond, int burst, LongSupplier nanos) {
    if (!(perSecond > 0) || burst < 1) {
      throw new IllegalArgumentException("a rate limit needs a positive rate and burst");
    }
    this.perSecond = perSecond;
    this.burst = burst;
    this.nanos = nanos;
  }

  /**
   * Takes one token of {@code tenant}'s bucket.
   *
   * @return empty when the call may go on, else the seconds to wait (at least 1)
   */
  public OptionalLong acquire(String tenant) {
    return buckets.computeIfAbsent(tenant, t -> new Bucket(burst, nanos.getAsLong())).take();
  }

  private final class Bucket {
    private double tokens;
    private long at;

    Bucket(double tokens, long at) {
      this.tokens = tokens;
      this.at = at;
    }

    synchronized OptionalLong take() {
      long now = nanos.getAsLong();
      tokens = Math.min(burst, tokens + (now - at) / 1e9 * perSecond);
      at = now;
      if (tokens >= 1) {
        tokens -= 1;
        return OptionalLong.empty();
      }
      return OptionalLong.of(Math.max(1, (long) Math.ceil((1 - tokens) / perSecond)));
    }
  }
}
