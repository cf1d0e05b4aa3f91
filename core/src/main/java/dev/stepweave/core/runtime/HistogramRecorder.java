package dev.stepweave.core.runtime;

/** Observations into fixed buckets; {@link #snapshot} gives the cumulative {@link Histogram}. */
final class HistogramRecorder {
  private final double[] bounds;
  private final long[] counts;
  private double sum;
  private long count;

  HistogramRecorder(double... bounds) {
    this.bounds = bounds.clone();
    this.counts = new long[bounds.length];
  }

  synchronized void observe(double value) {
    for (int i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        counts[i]++;
        break;
      }
    }
    sum += value;
    count++;
  }

  synchronized Histogram snapshot() {
    long[] cumulative = new long[counts.length];
    long running = 0;
    for (int i = 0; i < counts.length; i++) {
      running += counts[i];
      cumulative[i] = running;
    }
    return new Histogram(bounds, cumulative, sum, count);
  }
}
