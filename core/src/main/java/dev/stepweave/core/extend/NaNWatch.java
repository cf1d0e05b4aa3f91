package dev.stepweave.core.extend;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Finds the first non-finite value of each request, localised to loop, step and tap (a tap names
 * the block: {@code block_3}).
 */
public final class NaNWatch implements StepObserver {
  private final Map<String, NonFinite> first = new ConcurrentHashMap<>();

  @Override
  public boolean wantsTaps() {
    return true;
  }

  @Override
  public void onTap(StepInfo step, String name, TensorView value) {
    if (first.containsKey(step.requestId())) {
      return;
    }
    float[] v = value.values();
    for (int i = 0; i < v.length; i++) {
      if (!Float.isFinite(v[i])) {
        first.putIfAbsent(
            step.requestId(), new NonFinite(step.loopId(), step.stepIndex(), name, i, v[i]));
        return;
      }
    }
  }

  /** The first non-finite value a request produced, if any. */
  public Optional<NonFinite> firstFor(String requestId) {
    return Optional.ofNullable(first.get(requestId));
  }

  /**
   * Where a non-finite value first appeared.
   *
   * @param index the flat row-major index in the tap
   */
  public record NonFinite(String loopId, int stepIndex, String tap, int index, float value) {
    @Override
    public String toString() {
      return value + " in " + loopId + " step " + stepIndex + " tap " + tap + " at index " + index;
    }
  }
}
