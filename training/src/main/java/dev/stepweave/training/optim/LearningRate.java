package dev.stepweave.training.optim;

/**
 * A learning-rate schedule: the rate of optimiser step {@code step} (0-based), as the schedules of
 * diffusers/transformers ({@code get_constant_schedule}, {@code get_constant_schedule_with_warmup},
 * {@code get_cosine_schedule_with_warmup}) define them — so a recipe written for the reference
 * trains the same here.
 */
public sealed interface LearningRate {
  double at(int step);

  /** The same rate every step. */
  record Constant(double rate) implements LearningRate {
    @Override
    public double at(int step) {
      return rate;
    }
  }

  /**
   * {@code rate·step/warmup} for the first {@code warmup} steps (0 at step 0), then {@code rate}.
   */
  record LinearWarmup(double rate, int warmup) implements LearningRate {
    public LinearWarmup {
      if (warmup < 1) {
        throw new IllegalArgumentException("warm-up needs at least one step, not " + warmup);
      }
    }

    @Override
    public double at(int step) {
      return step < warmup ? rate * step / warmup : rate;
    }
  }

  /**
   * Linear warm-up over {@code warmup} steps, then half a cosine from {@code rate} down to 0 at
   * step {@code total}, and 0 after it (transformers' function would climb again past the end).
   */
  record Cosine(double rate, int warmup, int total) implements LearningRate {
    public Cosine {
      if (warmup < 0 || total <= warmup) {
        throw new IllegalArgumentException(
            "cosine schedule needs 0 ≤ warm-up < total steps, not " + warmup + " and " + total);
      }
    }

    @Override
    public double at(int step) {
      if (step < warmup) {
        return rate * step / Math.max(1, warmup);
      }
      double progress = Math.min(1, (double) (step - warmup) / (total - warmup));
      return rate * 0.5 * (1 + Math.cos(Math.PI * progress));
    }
  }
}
