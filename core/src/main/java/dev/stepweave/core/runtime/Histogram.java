package dev.stepweave.core.runtime;

import java.util.Arrays;

/**
 * A fixed-bucket histogram snapshot in the Prometheus sense: cumulative counts per upper bound,
 * plus the sum and count of all observations.
 *
 * @param upperBounds bucket upper bounds, ascending (the +Inf bucket is implicit: {@code count})
 * @param cumulativeCounts observations ≤ each bound
 * @param sum sum of all observations
 * @param count number of observations
 */
public record Histogram(double[] upperBounds, long[] cumulativeCounts, double sum, long count) {
  public Histogram {
    if (upperBounds.length != cumulativeCounts.length) {
      throw new IllegalArgumentException("bounds and counts differ in length");
    }
    upperBounds = upperBounds.clone();
    cumulativeCounts = cumulativeCounts.clone();
  }

  public static Histogram empty(double... upperBounds) {
    return new Histogram(upperBounds, new long[upperBounds.length], 0, 0);
  }

  @Override
  public double[] upperBounds() {
    return upperBounds.clone();
  }

  @Override
  public long[] cumulativeCounts() {
    return cumulativeCounts.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Histogram h
        && Arrays.equals(upperBounds, h.upperBounds)
        && Arrays.equals(cumulativeCounts, h.cumulativeCounts)
        && Double.compare(sum, h.sum) == 0
        && count == h.count;
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(cumulativeCounts) * 31 + Long.hashCode(count);
  }
}
