package dev.stepweave.core.extend;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.RecordingFormat;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.TensorSource;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Records the named taps of one request's loop, in run order, as {@code step_{i}/{tap}} (a tap a
 * step produces more than once, such as a block of the unconditional forward after the conditional
 * one, gets {@code #1}, {@code #2}…); saves them as a recording in the golden safetensors layout;
 * and compares a run against such a recording, tap by tap in run order, so the report's first
 * failing comparison is the first divergence.
 */
public final class ParityAligner implements StepObserver {
  private final String requestId;
  private final String loopId;
  private final Map<String, Tensor> taps = new LinkedHashMap<>();

  /**
   * @param requestId the request whose taps to record
   * @param loopId the loop whose taps to record ("denoise")
   */
  public ParityAligner(String requestId, String loopId) {
    this.requestId = requestId;
    this.loopId = loopId;
  }

  @Override
  public boolean wantsTaps() {
    return true;
  }

  @Override
  public synchronized void onTap(StepInfo step, String name, TensorView value) {
    if (!step.requestId().equals(requestId) || !step.loopId().equals(loopId)) {
      return;
    }
    String base = "step_" + step.stepIndex() + "/" + name;
    String key = base;
    for (int n = 1; taps.containsKey(key); n++) {
      key = base + "#" + n;
    }
    taps.put(key, value.copy());
  }

  /** The recorded taps (F32 host copies), in the order the run produced them. */
  public synchronized Map<String, Tensor> taps() {
    return new LinkedHashMap<>(taps);
  }

  /**
   * Writes the recorded taps as a recording ({@code request}, {@code loop} and the format's schema
   * version in its metadata).
   */
  public synchronized void save(Path file) {
    Safetensors.write(
        file, taps, RecordingFormat.metadata(Map.of("request", requestId, "loop", loopId)));
  }

  /**
   * Compares the recorded taps with {@code recording}'s tensors of the same names, in run order. A
   * recorded tensor this run never produced is an error; taps the recording lacks are not compared.
   * A recording of a newer schema version than this build reads is an error, compared not at all.
   */
  public synchronized ParityReport compareWith(TensorSource recording, Tolerance tolerance) {
    ParityReport report = new ParityReport();
    var unreadable = RecordingFormat.problem(recording);
    if (unreadable.isPresent()) {
      report.error("recording of " + loopId + ": " + unreadable.get());
      return report;
    }
    Set<String> expected = new TreeSet<>(recording.keys());
    taps.forEach(
        (name, actual) -> {
          if (expected.remove(name)) {
            report.add(Comparison.of(name, actual, recording.loadF32(name), tolerance));
          }
        });
    expected.forEach(name -> report.error("the run produced no tap '" + name + "'"));
    return report;
  }
}
