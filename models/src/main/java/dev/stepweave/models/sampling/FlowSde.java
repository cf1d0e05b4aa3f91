package dev.stepweave.models.sampling;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.util.Optional;

/**
 * A stochastic flow-matching sampler: the reverse-time SDE whose marginals match the flow ODE's,
 * discretised by Euler–Maruyama, as Flow-GRPO samples rollouts. On the flow's schedule (the Euler
 * sampler's, shift included) a step from σ to σ' = σ + dt (dt < 0) with velocity v is
 *
 * <pre>
 *   s_σ  = η·√(σ / (1 − σ))                       (σ = 1 is read as the next sigma, which is finite)
 *   mean = x·(1 + s_σ²·dt / (2σ)) + v·(1 + s_σ²·(1 − σ) / (2σ))·dt
 *   x'   = mean + s_σ·√(−dt)·ε,   ε ~ N(0, I)
 * </pre>
 *
 * so each step is a Gaussian whose log-probability a likelihood-based RL method needs ({@link
 * GaussianStep}); η = 0 would be the ODE, which has none, hence η > 0.
 *
 * <p>The noise of step {@code i} comes from its own torch-compatible generator seeded by mixing the
 * state's noise seed with {@code i}: a trajectory depends only on (seed, step), so a state restored
 * mid-way continues bit-identically without carrying a generator.
 */
public final class FlowSde implements Sampler {
  /** The config's class name: a Stepweave sampler, not a diffusers scheduler. */
  public static final String CONFIG_CLASS = "StepweaveFlowSdeScheduler";

  /** Flow-GRPO's default noise level. */
  public static final double DEFAULT_NOISE_LEVEL = 0.7;

  private final FlowMatchEuler flow;
  private final double noiseLevel;

  public FlowSde(int trainTimesteps, double shift, double noiseLevel) {
    if (!(noiseLevel > 0) || Double.isInfinite(noiseLevel)) {
      throw new IllegalArgumentException(
          "FlowSde needs a finite noise_level > 0, got " + noiseLevel);
    }
    this.flow = new FlowMatchEuler(trainTimesteps, shift);
    this.noiseLevel = noiseLevel;
  }

  static FlowSde fromConfig(SchedulerConfig c) {
    return new FlowSde(
        c.integer("num_train_timesteps", 1000),
        c.number("shift", 1.0),
        c.number("noise_level", DEFAULT_NOISE_LEVEL));
  }

  public double noiseLevel() {
    return noiseLevel;
  }

  @Override
  public SamplerSchedule schedule(int numSteps) {
    return flow.schedule(numSteps);
  }

  @Override
  public SamplerStep step(Backend backend, SamplerState state, Tensor modelOutput, Tensor sample) {
    GaussianStep g = transition(backend, state, modelOutput, sample);
    Tensor noise =
        backend.upload(
            TorchGenerator.seeded(stepSeed(state.noiseSeed(), state.stepIndex()))
                .randn(sample.shape()),
            sample.dtype());
    Tensor next = backend.add(g.mean(), backend.affine(noise, (float) g.std(), 0f));
    return new SamplerStep(next, state.advanced(), Optional.of(g));
  }

  /**
   * The Gaussian that step {@code state.stepIndex()} draws from, given the model's velocity {@code
   * modelOutput} at {@code sample}: what a trainer recomputes with its own forward to get the
   * log-probability of a recorded next sample under the current policy.
   */
  public GaussianStep transition(
      Backend backend, SamplerState state, Tensor modelOutput, Tensor sample) {
    if (state.isFinished()) {
      throw new IllegalStateException("the sampler has run all " + state.stepIndex() + " steps");
    }
    SamplerSchedule s = state.schedule();
    int i = state.stepIndex();
    double sigma = s.sigma(i);
    double dt = s.sigma(i + 1) - sigma;
    // At σ = 1 the noise scale's denominator vanishes; Flow-GRPO reads it at the next sigma.
    double denominator = sigma >= 1 ? s.sigma(Math.min(i + 1, s.steps())) : sigma;
    double scale = noiseLevel * Math.sqrt(sigma / (1 - denominator));
    double sampleScale = 1 + scale * scale * dt / (2 * sigma);
    double velocityScale = (1 + scale * scale * (1 - sigma) / (2 * sigma)) * dt;
    Tensor mean =
        backend.add(
            backend.affine(sample, (float) sampleScale, 0f),
            backend.affine(modelOutput, (float) velocityScale, 0f));
    return new GaussianStep(mean, scale * Math.sqrt(-dt));
  }

  /**
   * A seed per (generation, step): SplitMix64's finaliser over the pair, so nearby seeds differ.
   */
  static long stepSeed(long seed, int step) {
    long z = seed + 0x9E3779B97F4A7C15L * (step + 1L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return (z ^ (z >>> 31)) & Long.MAX_VALUE; // torch seeds are unsigned; keep it non-negative
  }
}
