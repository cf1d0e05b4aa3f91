package dev.stepweave.core.extend;

import java.time.Duration;

/**
 * A read-only extension: sees each call's and each step's timing and, when it asks for them, the
 * step's named taps (block outputs, the prediction) as {@link TensorView}s it cannot mutate.
 */
public interface StepObserver {

  /** Whether loops should produce taps for this observer (costs a view per tap). */
  default boolean wantsTaps() {
    return false;
  }

  default void onTap(StepInfo step, String name, TensorView value) {}

  /**
   * After a step ran, with its measured time: its share of the call it ran in (the call's time
   * divided by the units that shared it).
   */
  default void afterStep(StepInfo step, Duration elapsed) {}

  /** After the scheduler ran a call (one unit or a batch), with the call's measured time. */
  default void afterCall(CallInfo call, Duration elapsed) {}
}
