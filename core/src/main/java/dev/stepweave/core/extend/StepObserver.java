package dev.stepweave.core.extend;

import java.time.Duration;

/**
 * A read-only extension: sees each step's timing and, when it asks for them, the step's named taps
 * (block outputs, the prediction) as {@link TensorView}s it cannot mutate.
 */
public interface StepObserver {

  /** Whether loops should produce taps for this observer (costs a view per tap). */
  default boolean wantsTaps() {
    return false;
  }

  default void onTap(StepInfo step, String name, TensorView value) {}

  /** After a step ran, with its measured time. */
  default void afterStep(StepInfo step, Duration elapsed) {}
}
