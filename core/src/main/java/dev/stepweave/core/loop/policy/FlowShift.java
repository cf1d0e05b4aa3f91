package dev.stepweave.core.loop.policy;

/**
 * The flow-matching time shift {@code σ' = s·σ / (1 + (s − 1)·σ)}: larger shifts spend more steps
 * at high noise, which large videos need.
 */
public record FlowShift(double shift) {
  public FlowShift {
    if (!(shift > 0) || Double.isInfinite(shift)) {
      throw new IllegalArgumentException("flow shift must be a finite number > 0, got " + shift);
    }
  }

  public double apply(double sigma) {
    return shift * sigma / (1 + (shift - 1) * sigma);
  }
}
