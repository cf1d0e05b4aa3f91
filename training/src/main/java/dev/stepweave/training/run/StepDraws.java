package dev.stepweave.training.run;

import dev.stepweave.training.shapes.SplitMix64;

/**
 * The random numbers of one optimiser step: a SplitMix64 stream that is a pure function of the
 * run's seed and the step's index, so a run resumed at step k draws exactly what it would have
 * drawn going straight through — the "RNG state" of a checkpoint is its step. Gaussians by
 * Box–Muller with {@link StrictMath}, so every JVM draws the same bits.
 */
final class StepDraws {
  private static final long STEP_STREAM = 0x5354_4550_5345_4544L;

  private SplitMix64 random;

  StepDraws(long seed, int step) {
    this(new SplitMix64(SplitMix64.mix(seed ^ STEP_STREAM) ^ SplitMix64.mix(step + 1L)));
  }

  private StepDraws(SplitMix64 random) {
    this.random = random;
  }

  /**
   * The stream as it will be after {@code draws} more draws (a {@link #uniform} or {@link #bits} is
   * one, {@link #gaussians} takes {@link #drawsOf}): the draws there, out of order.
   */
  StepDraws ahead(long draws) {
    return new StepDraws(random.ahead(draws));
  }

  /** Moves this stream past {@code draws} draws (made through {@link #ahead}). */
  void skip(long draws) {
    random = random.ahead(draws);
  }

  /** How many draws {@link #gaussians gaussians(n)} takes: two per pair. */
  static long drawsOf(int gaussians) {
    return 2L * ((gaussians + 1) / 2);
  }

  /** Uniform in {@code [0, 1)}. */
  double uniform() {
    return random.nextDouble();
  }

  /** 64 uniform bits (a seed for a generator of its own). */
  long bits() {
    return random.nextLong();
  }

  /** {@code n} standard normal floats. */
  float[] gaussians(int n) {
    float[] out = new float[n];
    for (int i = 0; i < n; i += 2) {
      double radius = StrictMath.sqrt(-2 * StrictMath.log(1 - random.nextDouble()));
      double angle = 2 * StrictMath.PI * random.nextDouble();
      out[i] = (float) (radius * StrictMath.cos(angle));
      if (i + 1 < n) {
        out[i + 1] = (float) (radius * StrictMath.sin(angle));
      }
    }
    return out;
  }
}
