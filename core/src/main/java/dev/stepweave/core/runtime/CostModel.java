package dev.stepweave.core.runtime;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.CallInfo;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.tensor.Precision;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Predicts device-ms per (card, work kind, shape, precision, batch size). Before a key has been
 * measured its prediction is static: the work unit's own estimate, else a roofline of its FLOPs and
 * bytes against the device's rates, times the batch size. Each measurement moves the key's
 * prediction by an exponentially weighted average. Admission uses the static figure (a forecast
 * never licenses optimism); batching uses the calibrated one. Its measurements come from a {@link
 * Profiler} (the engine's own, which sees every call the scheduler runs). Thread-safe; {@link
 * #snapshot} is the data a fleet router reads.
 */
public final class CostModel implements Profiler.Calibration {
  /** What a prediction is for. */
  public record Key(
      String modelId, WorkKind kind, ShapeSignature shape, Precision precision, int batchSize) {}

  /**
   * One key's figures.
   *
   * @param staticMillis the static estimate
   * @param predictedMillis the current prediction (static until measured)
   * @param samples measurements folded in
   */
  public record Entry(Key key, double staticMillis, double predictedMillis, long samples) {}

  /**
   * How far measurements of one (card, kind, precision) sit from their static estimates, over all
   * its measured shapes and batch sizes: predicted device-ms over static device-ms, each key
   * weighted by its static figure.
   *
   * @param factor measured over static (1: the roofline was right; above: slower than predicted)
   * @param keys measured keys it sums over
   * @param samples measurements folded into them
   */
  public record Calibration(
      String modelId, WorkKind kind, Precision precision, double factor, int keys, long samples) {}

  /**
   * The model as data.
   *
   * @param calibrations one per measured (card, kind, precision); empty before any call ran
   */
  public record Snapshot(
      double flopsPerMilli,
      double bytesPerMilli,
      List<Entry> entries,
      List<Calibration> calibrations) {
    public Snapshot {
      entries = List.copyOf(entries);
      calibrations = List.copyOf(calibrations);
    }
  }

  /** Weight of the newest measurement. */
  static final double ALPHA = 0.3;

  private final double flopsPerMilli;
  private final double bytesPerMilli;
  private final Map<Key, Entry> entries = new HashMap<>();

  public CostModel(double flopsPerMilli, double bytesPerMilli) {
    this.flopsPerMilli = flopsPerMilli;
    this.bytesPerMilli = bytesPerMilli;
  }

  /** The static device-ms of one unit (or of a whole request's footprint). */
  public double staticMillis(ResourceRequest r) {
    if (r.predictedDeviceMillis() > 0) {
      return r.predictedDeviceMillis();
    }
    return Math.max(r.flops() / flopsPerMilli, r.bytesMoved() / bytesPerMilli);
  }

  /** The predicted device-ms of a batch of {@code key.batchSize()} units like {@code unit}. */
  public synchronized double predict(Key key, ResourceRequest unit) {
    Entry e = entries.get(key);
    if (e != null) {
      return e.predictedMillis();
    }
    // An unmeasured batch size costs at most that many measured single units.
    Entry single = entries.get(new Key(key.modelId(), key.kind(), key.shape(), key.precision(), 1));
    double perUnit = single != null ? single.predictedMillis() : staticMillis(unit);
    return perUnit * key.batchSize();
  }

  /**
   * Folds in a measured batch time. A key's first call in a process pays what only first calls pay
   * (loading kernels, timing plans, recording a CUDA graph — several times a warm call's time), so
   * its second measurement replaces the first instead of averaging with it; from then on each moves
   * the prediction by {@link #ALPHA}.
   */
  public synchronized void observe(Key key, ResourceRequest unit, double measuredMillis) {
    Entry e = entries.get(key);
    double prior = e != null ? e.predictedMillis() : measuredMillis;
    double next =
        e != null && e.samples() > 1 ? prior + ALPHA * (measuredMillis - prior) : measuredMillis;
    entries.put(
        key,
        new Entry(
            key, staticMillis(unit) * key.batchSize(), next, e == null ? 1 : e.samples() + 1));
  }

  /** Folds in a call a profiler measured. */
  @Override
  public void calibrate(CallInfo call, Duration elapsed) {
    observe(
        new Key(call.modelId(), call.kind(), call.shape(), call.precision(), call.batchSize()),
        call.unit(),
        elapsed.toNanos() / 1e6);
  }

  /**
   * The calibration of one (card, kind, precision), if any key of it was measured with a non-zero
   * static estimate. It carries a measured ratio to shapes not measured yet: how a jumbo request is
   * priced before it ever ran.
   */
  public synchronized Optional<Calibration> calibration(
      String modelId, WorkKind kind, Precision precision) {
    double predicted = 0;
    double statik = 0;
    int keys = 0;
    long samples = 0;
    for (Entry e : entries.values()) {
      Key k = e.key();
      if (k.modelId().equals(modelId)
          && k.kind() == kind
          && k.precision() == precision
          && e.staticMillis() > 0) {
        predicted += e.predictedMillis();
        statik += e.staticMillis();
        keys++;
        samples += e.samples();
      }
    }
    return keys == 0
        ? Optional.empty()
        : Optional.of(new Calibration(modelId, kind, precision, predicted / statik, keys, samples));
  }

  public synchronized Snapshot snapshot() {
    Map<List<Object>, Calibration> calibrations = new LinkedHashMap<>();
    for (Entry e : entries.values()) {
      Key k = e.key();
      calibrations.computeIfAbsent(
          List.of(k.modelId(), k.kind(), k.precision()),
          x -> calibration(k.modelId(), k.kind(), k.precision()).orElse(null));
    }
    calibrations.values().removeIf(java.util.Objects::isNull);
    return new Snapshot(
        flopsPerMilli,
        bytesPerMilli,
        new ArrayList<>(entries.values()),
        new ArrayList<>(calibrations.values()));
  }
}
