package dev.stepweave.models.sampling;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * One stochastic sampler step as a distribution: the next sample is drawn from {@code N(mean,
 * std²·I)}. The log-probability of a sample under it is what a likelihood-based RL objective
 * (Flow-GRPO-style) compares between the policy that rolled out and the one being trained.
 *
 * @param mean the step's mean, on the sampler's backend
 * @param std the standard deviation of every element (> 0)
 */
public record GaussianStep(Tensor mean, double std) {
  private static final double HALF_LOG_TWO_PI = 0.5 * Math.log(2 * Math.PI);

  public GaussianStep {
    if (!(std > 0) || Double.isInfinite(std)) {
      throw new IllegalArgumentException("a Gaussian step needs a finite std > 0, got " + std);
    }
  }

  /**
   * The log-density of {@code sample} averaged over its elements (the per-element mean keeps
   * figures comparable across sizes, as Flow-GRPO reports them), summed in double on the host so
   * the same inputs give the same figure whichever forward produced the mean.
   */
  public double meanLogProb(Backend backend, Tensor sample) {
    float[] x = backend.download(sample).toFloatArray();
    float[] m = backend.download(mean).toFloatArray();
    if (x.length != m.length) {
      throw new IllegalArgumentException(
          "sample has " + x.length + " elements, the step's mean " + m.length);
    }
    double squares = 0;
    for (int i = 0; i < x.length; i++) {
      double d = (double) x[i] - m[i];
      squares += d * d;
    }
    return -squares / (2 * std * std * x.length) - Math.log(std) - HALF_LOG_TWO_PI;
  }
}
