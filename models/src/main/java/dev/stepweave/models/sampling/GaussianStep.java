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

  /**
   * {@link #meanLogProb} as a {@code [1]} tensor built from backend operations, so that on a
   * recording backend it is differentiable in the mean (the policy's prediction): what a
   * likelihood-based objective takes the gradient of. Its value agrees with {@link #meanLogProb} to
   * float rounding; the identity checks use that one.
   */
  public Tensor meanLogProbTensor(Backend backend, Tensor sample) {
    Tensor diff = backend.contiguous(backend.sub(sample, mean));
    long n = diff.numel();
    Tensor squares = backend.unary(diff, Backend.UnaryOp.SQUARE);
    Tensor sum = backend.sumLastDim(squares.reshape(1, (int) n));
    return backend
        .affine(
            sum, (float) (-1.0 / (2 * std * std * n)), (float) (-Math.log(std) - HALF_LOG_TWO_PI))
        .reshape(1);
  }
}
