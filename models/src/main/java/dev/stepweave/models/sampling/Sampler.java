package dev.stepweave.models.sampling;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.Optional;

/**
 * A diffusion sampler (a diffusers "scheduler"): the timestep/sigma schedule for a number of steps
 * and the update that turns a model output into the next sample.
 *
 * <p>A sampler holds only its configuration; everything that belongs to one generation lives in the
 * {@link SamplerState} passed in and returned. One sampler therefore serves any number of
 * concurrent requests, and a state saved mid-trajectory resumes bit-identically.
 */
public sealed interface Sampler permits FlowUniPCMultistep, FlowMatchEuler, FlowSde {

  /** Timesteps (the model's conditioning value) and sigmas for {@code numSteps} steps. */
  SamplerSchedule schedule(int numSteps);

  /**
   * The state before the first step of a {@code numSteps}-step generation whose stochastic steps
   * (if the sampler has any) draw their noise from {@code seed}.
   */
  default SamplerState start(int numSteps, long seed) {
    return SamplerState.initial(schedule(numSteps), seed);
  }

  /** {@link #start(int, long)} for a deterministic sampler's generation. */
  default SamplerState start(int numSteps) {
    return start(numSteps, 0);
  }

  /**
   * One step: {@code modelOutput} is the model's prediction for {@code sample} at timestep {@code
   * state.timestep()}. Inputs are not modified.
   *
   * @return the next sample and the state for the following step
   */
  SamplerStep step(Backend backend, SamplerState state, Tensor modelOutput, Tensor sample);

  /**
   * The outcome of one {@link #step}.
   *
   * @param transition the Gaussian the sample was drawn from, for a stochastic step (its
   *     log-probability is what likelihood-based RL needs); empty for a deterministic one
   */
  record SamplerStep(Tensor sample, SamplerState state, Optional<GaussianStep> transition) {
    public SamplerStep(Tensor sample, SamplerState state) {
      this(sample, state, Optional.empty());
    }
  }
}
