package dev.stepweave.core.extend;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.ShapeSignature;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Measured time per work unit, grouped by (loop, kind, shape signature): the samples a cost model
 * calibrates its predicted device time against.
 */
public final class Profiler implements StepObserver {
  private final Map<Key, Totals> totals = new ConcurrentHashMap<>();

  @Override
  public void afterStep(StepInfo step, Duration elapsed) {
    Totals t =
        totals.computeIfAbsent(
            new Key(step.loopId(), step.kind(), step.shape()), k -> new Totals());
    t.count.increment();
    t.nanos.add(elapsed.toNanos());
  }

  /** Everything measured so far. */
  public List<Measurement> measurements() {
    List<Measurement> out = new ArrayList<>();
    totals.forEach(
        (k, t) ->
            out.add(new Measurement(k.loopId, k.kind, k.shape, t.count.sum(), t.nanos.sum())));
    return out;
  }

  /**
   * The measured time of one kind of work unit.
   *
   * @param count units measured
   * @param totalNanos their summed wall time
   */
  public record Measurement(
      String loopId, WorkKind kind, ShapeSignature shape, long count, long totalNanos) {
    public double meanMillis() {
      return count == 0 ? 0 : totalNanos / 1e6 / count;
    }
  }

  private record Key(String loopId, WorkKind kind, ShapeSignature shape) {}

  private static final class Totals {
    final LongAdder count = new LongAdder();
    final LongAdder nanos = new LongAdder();
  }
}
