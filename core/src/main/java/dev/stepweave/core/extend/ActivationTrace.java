package dev.stepweave.core.extend;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Summary statistics of every tap of every step, in order: to see where activations drift. */
public final class ActivationTrace implements StepObserver {
  private final List<Entry> entries = new CopyOnWriteArrayList<>();

  @Override
  public boolean wantsTaps() {
    return true;
  }

  @Override
  public void onTap(StepInfo step, String name, TensorView value) {
    float[] v = value.values();
    double sumAbs = 0;
    double maxAbs = 0;
    for (float x : v) {
      sumAbs += Math.abs(x);
      maxAbs = Math.max(maxAbs, Math.abs(x));
    }
    entries.add(
        new Entry(
            step.requestId(),
            step.loopId(),
            step.stepIndex(),
            name,
            v.length == 0 ? 0 : sumAbs / v.length,
            maxAbs));
  }

  public List<Entry> entries() {
    return List.copyOf(entries);
  }

  /** One tap's statistics. */
  public record Entry(
      String requestId, String loopId, int stepIndex, String tap, double meanAbs, double maxAbs) {}
}
