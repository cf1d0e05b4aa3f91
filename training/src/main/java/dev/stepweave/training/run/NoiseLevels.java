package dev.stepweave.training.run;

/**
 * How a flow-matching run draws each sample's noise level σ: a uniform through the scheduler's flow
 * shift ({@code s·u / (1 + (s−1)·u)}, the σ the sampler spends its steps at), truncated to {@code
 * [lowest, highest]}. A range narrower than [0, 1] trains an expert of the noise levels a
 * two-expert (Wan2.2-style) transformer hands it: a high-noise expert sees only what it will be
 * asked about, instead of a quarter of its samples there.
 *
 * @param shift the flow shift (1: σ uniform)
 * @param lowest the smallest σ drawn
 * @param highest the largest σ drawn
 */
public record NoiseLevels(double shift, double lowest, double highest) {
  /** Every σ in [0, 1] through the shift. */
  public static NoiseLevels shifted(double shift) {
    return new NoiseLevels(shift, 0, 1);
  }

  public NoiseLevels {
    if (!(shift > 0)) {
      throw new IllegalArgumentException("the flow shift must be > 0, got " + shift);
    }
    if (!(0 <= lowest && lowest < highest && highest <= 1)) {
      throw new IllegalArgumentException(
          "the σ range must satisfy 0 ≤ lowest < highest ≤ 1, got ["
              + lowest
              + ", "
              + highest
              + "]");
    }
  }

  /** Whether σ may be anywhere in [0, 1]. */
  public boolean whole() {
    return lowest == 0 && highest == 1;
  }

  /**
   * The σ of uniform {@code u} in [0, 1): the shifted distribution's inverse CDF on the range's
   * share of it, so every σ in the range keeps its relative odds; the whole range takes u as it is,
   * so a run without a range draws the σ it always drew.
   */
  public double sigma(double u) {
    double v = whole() ? u : quantile(lowest) + u * (quantile(highest) - quantile(lowest));
    return shift * v / (1 + (shift - 1) * v);
  }

  /** The shift's inverse: the uniform that lands on {@code sigma}. */
  private double quantile(double sigma) {
    return sigma / (shift - (shift - 1) * sigma);
  }
}
