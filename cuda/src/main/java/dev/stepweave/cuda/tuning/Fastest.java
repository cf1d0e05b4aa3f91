package dev.stepweave.cuda.tuning;

import dev.stepweave.cuda.driver.CudaException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The fastest of a library's candidates for one shape, by measurement: each is run a few times (the
 * first run may pay for lazy loading) and its best time counts; a candidate whose run fails is
 * passed over, and on equal times the earlier one — the library's own preference — wins.
 */
public final class Fastest {
  private Fastest() {}

  /** How long one run of a candidate takes, in milliseconds; throws when it does not run. */
  @FunctionalInterface
  public interface Timer<T> {
    float time(T candidate);
  }

  /**
   * The candidate chosen, its best time, and every candidate's ("engine 12 0.840 ms", or why not).
   */
  public record Timed<T>(T choice, float ms, List<String> times) {}

  /**
   * Times each of {@code candidates} {@code runs} times; null when every one fails. {@code label}
   * names a candidate in the times ("engine 12").
   */
  public static <T> Timed<T> of(
      List<T> candidates, int runs, Timer<T> timer, Function<T, String> label) {
    T best = null;
    float bestMs = Float.POSITIVE_INFINITY;
    List<String> times = new ArrayList<>();
    for (T candidate : candidates) {
      float ms = Float.POSITIVE_INFINITY;
      try {
        for (int i = 0; i < runs; i++) {
          ms = Math.min(ms, timer.time(candidate));
        }
      } catch (CudaException e) {
        times.add(label.apply(candidate) + " failed: " + e.getMessage());
        continue;
      }
      times.add(String.format("%s %.3f ms", label.apply(candidate), ms));
      if (ms < bestMs) {
        best = candidate;
        bestMs = ms;
      }
    }
    return best == null ? null : new Timed<>(best, bestMs, List.copyOf(times));
  }
}
