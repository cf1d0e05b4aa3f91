package dev.stepweave.cuda.tuning;

import dev.stepweave.cuda.driver.CudaException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.ToLongFunction;

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
    return of(candidates, runs, timer, label, c -> 0L, 0f);
  }

  /**
   * As {@link #of(List, int, Timer, Function)}, but of the candidates within {@code slack} (a
   * fraction) of the fastest time, the one of least {@code cost} wins (on equal costs the faster):
   * a plan's workspace is memory every run holds, and a plan 1 % slower for a tenth of it is the
   * better choice — two runs' best does not tell 1 % apart reliably anyway.
   */
  public static <T> Timed<T> of(
      List<T> candidates,
      int runs,
      Timer<T> timer,
      Function<T, String> label,
      ToLongFunction<T> cost,
      float slack) {
    List<T> ran = new ArrayList<>();
    List<Float> best = new ArrayList<>();
    List<String> times = new ArrayList<>();
    float fastest = Float.POSITIVE_INFINITY;
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
      ran.add(candidate);
      best.add(ms);
      fastest = Math.min(fastest, ms);
    }
    int chosen = -1;
    for (int i = 0; i < ran.size(); i++) {
      if (best.get(i) > fastest * (1 + slack)) {
        continue;
      }
      if (chosen < 0) {
        chosen = i;
        continue;
      }
      long c = cost.applyAsLong(ran.get(i));
      long cChosen = cost.applyAsLong(ran.get(chosen));
      if (c < cChosen || (c == cChosen && best.get(i) < best.get(chosen))) {
        chosen = i;
      }
    }
    return chosen < 0 ? null : new Timed<>(ran.get(chosen), best.get(chosen), List.copyOf(times));
  }
}
