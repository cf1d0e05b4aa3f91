package dev.stepweave.models.sampling;

import dev.stepweave.core.loop.policy.FlowShift;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * diffusers' {@code FlowMatchEulerDiscreteScheduler} with a static shift: the Euler step {@code x +
 * (σ_next − σ)·v} of a flow-matching velocity {@code v}.
 *
 * <p>The schedule follows the reference's dtype path: the training sigmas are shifted once in
 * float32, their ends (as float64) span a float64 linspace of timesteps, which is shifted again in
 * float64, then rounded to float32.
 */
public final class FlowMatchEuler implements Sampler {
  public static final String DIFFUSERS_CLASS = "FlowMatchEulerDiscreteScheduler";

  private final int trainTimesteps;
  private final double shift;

  public FlowMatchEuler(int trainTimesteps, double shift) {
    if (trainTimesteps < 1 || !(shift > 0)) {
      throw new IllegalArgumentException(
          "FlowMatchEuler needs num_train_timesteps >= 1 and shift > 0, got "
              + trainTimesteps
              + " and "
              + shift);
    }
    this.trainTimesteps = trainTimesteps;
    this.shift = shift;
  }

  static FlowMatchEuler fromConfig(SchedulerConfig c) {
    String name = FlowMatchEuler.class.getSimpleName();
    for (String feature :
        new String[] {
          "use_dynamic_shifting",
          "invert_sigmas",
          "use_karras_sigmas",
          "use_exponential_sigmas",
          "use_beta_sigmas",
          "stochastic_sampling"
        }) {
      c.rejectEnabled(feature, name);
    }
    c.rejectSet("shift_terminal", name);
    return new FlowMatchEuler(c.integer("num_train_timesteps", 1000), c.number("shift", 1.0));
  }

  @Override
  public SamplerSchedule schedule(int numSteps) {
    if (numSteps < 1) {
      throw new IllegalArgumentException("need at least one step, got " + numSteps);
    }
    double sigmaMax = shiftedTrainingSigma(trainTimesteps);
    double sigmaMin = shiftedTrainingSigma(1);
    double[] t = Linspace.of(sigmaMax * trainTimesteps, sigmaMin * trainTimesteps, numSteps);
    float[] timesteps = new float[numSteps];
    float[] sigmas = new float[numSteps + 1];
    for (int i = 0; i < numSteps; i++) {
      double s = t[i] / trainTimesteps;
      sigmas[i] = (float) new FlowShift(shift).apply(s);
      timesteps[i] = sigmas[i] * (float) trainTimesteps;
    }
    return new SamplerSchedule(timesteps, sigmas);
  }

  /** The float32 training sigma of training timestep {@code t} after the shift. */
  private float shiftedTrainingSigma(int t) {
    float s = (float) t / (float) trainTimesteps;
    float shiftF = (float) shift;
    return shiftF * s / (1f + (float) (shift - 1) * s);
  }

  @Override
  public SamplerStep step(Backend backend, SamplerState state, Tensor modelOutput, Tensor sample) {
    int i = state.stepIndex();
    if (state.isFinished()) {
      throw new IllegalStateException("the sampler has run all " + i + " steps");
    }
    float dt = state.schedule().sigma(i + 1) - state.schedule().sigma(i);
    Tensor next = backend.add(sample, backend.affine(modelOutput, dt, 0f));
    return new SamplerStep(next, state.advanced());
  }
}
