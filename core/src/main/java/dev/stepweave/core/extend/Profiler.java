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
 * Measured time per work unit, grouped by (loop, kind, shape signature), and per call, grouped by
 * (kind, shape signature, batch size). Every call it sees it also hands to its {@link Calibration}
 * (the engine's own profiler hands them to the engine's cost model, which is how the cost model is
 * calibrated).
 */
public final class Profiler implements StepObserver {
  /** Where measured calls go to calibrate predictions (a cost model). */
  @FunctionalInterface
  public interface Calibration {
    Calibration NONE = (call, elapsed) -> {};

    void calibrate(CallInfo call, Duration elapsed);
  }

  private final Calibration calibration;
  private final Map<Key, Totals> steps = new ConcurrentHashMap<>();
  private final Map<CallKey, Totals> calls = new ConcurrentHashMap<>();

  /** A profiler that only measures. */
  public Profiler() {
    this(Calibration.NONE);
  }

  /** A profiler that also calibrates {@code calibration} with every call it measures. */
  public Profiler(Calibration calibration) {
    this.calibration = calibration;
  }

  @Override
  public void afterStep(StepInfo step, Duration elapsed) {
    steps
        .computeIfAbsent(new Key(step.loopId(), step.kind(), step.shape()), k -> new Totals())
        .add(elapsed);
  }

  @Override
  public void afterCall(CallInfo call, Duration elapsed) {
    calls
        .computeIfAbsent(
            new CallKey(call.kind(), call.shape(), call.batchSize()), k -> new Totals())
        .add(elapsed);
    calibration.calibrate(call, elapsed);
  }

  /** Every step measured so far (each unit's share of its call). */
  public List<Measurement> measurements() {
    List<Measurement> out = new ArrayList<>();
    steps.forEach(
        (k, t) ->
            out.add(new Measurement(k.loopId, k.kind, k.shape, t.count.sum(), t.nanos.sum())));
    return out;
  }

  /** Every call measured so far. */
  public List<CallMeasurement> callMeasurements() {
    List<CallMeasurement> out = new ArrayList<>();
    calls.forEach(
        (k, t) ->
            out.add(
                new CallMeasurement(k.kind, k.shape, k.batchSize, t.count.sum(), t.nanos.sum())));
    return out;
  }

  /**
   * The measured time of one kind of work unit.
   *
   * @param count units measured
   * @param totalNanos their summed share of wall time
   */
  public record Measurement(
      String loopId, WorkKind kind, ShapeSignature shape, long count, long totalNanos) {
    public double meanMillis() {
      return count == 0 ? 0 : totalNanos / 1e6 / count;
    }
  }

  /**
   * The measured time of calls of one kind, shape and batch size.
   *
   * @param count calls measured
   * @param totalNanos their summed wall time
   */
  public record CallMeasurement(
      WorkKind kind, ShapeSignature shape, int batchSize, long count, long totalNanos) {
    public double meanMillis() {
      return count == 0 ? 0 : totalNanos / 1e6 / count;
    }
  }

  private record Key(String loopId, WorkKind kind, ShapeSignature shape) {}

  private record CallKey(WorkKind kind, ShapeSignature shape, int batchSize) {}

  private static final class Totals {
    final LongAdder count = new LongAdder();
    final LongAdder nanos = new LongAdder();

    void add(Duration d) {
      count.increment();
      nanos.add(d.toNanos());
    }
  }
}
