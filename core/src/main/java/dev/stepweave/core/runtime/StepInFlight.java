package dev.stepweave.core.runtime;

import java.time.Instant;

/**
 * The step a request is running right now: a step is indivisible, so a cancellation lands when it
 * ends.
 *
 * @param loopId its loop
 * @param stepIndex its index in the loop (0-based)
 * @param startedAt when its call started
 * @param predictedSeconds the cost model's prediction for the call it runs in, with the switch of
 *     swapped components the call waits for, if any
 */
public record StepInFlight(
    String loopId, int stepIndex, Instant startedAt, double predictedSeconds) {

  /** Predicted seconds until it ends, as of {@code now} (never negative). */
  public double remainingSeconds(Instant now) {
    double elapsed = java.time.Duration.between(startedAt, now).toNanos() / 1e9;
    return Math.max(0, predictedSeconds - elapsed);
  }
}
