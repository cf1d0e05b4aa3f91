package dev.stepweave.models.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The stochastic sampler: its law, its log-probabilities, and its determinism in (seed, step). */
class FlowSdeTest {
  private static final Backend BACKEND = new CpuBackend();
  private static final int STEPS = 8;

  private static Sampler.SamplerStep advance(Sampler s, SamplerState state, Tensor sample) {
    return s.step(
        BACKEND, state, SyntheticFlowModel.predict(BACKEND, sample, state.timestep()), sample);
  }

  private static Tensor run(Sampler s, long seed, Tensor sample, int from, SamplerState state) {
    for (int i = from; !state.isFinished(); i++) {
      Sampler.SamplerStep step = advance(s, state, sample);
      sample = step.sample();
      state = step.state();
    }
    return sample;
  }

  private static Tensor noise() {
    return TorchGenerator.seeded(7).randn(1, 4, 2, 3, 3);
  }

  /**
   * Data x₀ ~ N(0, c²I) has the exact velocity {@code E[ε − x₀ | x_σ] = x·(σ − (1−σ)c²) / ((1−σ)²c²
   * + σ²)}. Driven by it from pure noise, the SDE must land on the data's variance c², not the
   * noise's 1 (a wrong drift or noise scale lands elsewhere); the deterministic Euler ODE must
   * agree.
   */
  @Test
  void withTheExactVelocityTheSdeSamplesTheDataDistribution() {
    double c2 = 0.25;
    int n = 40_000;
    int steps = 200;
    for (Sampler s : new Sampler[] {new FlowSde(1000, 1.0, 0.7), new FlowMatchEuler(1000, 1.0)}) {
      Tensor x = TorchGenerator.seeded(11).randn(n);
      SamplerState state = s.start(steps, 5);
      while (!state.isFinished()) {
        double sigma = state.schedule().sigma(state.stepIndex());
        double k = (sigma - (1 - sigma) * c2) / ((1 - sigma) * (1 - sigma) * c2 + sigma * sigma);
        Tensor v = BACKEND.affine(x, (float) k, 0f);
        Sampler.SamplerStep step = s.step(BACKEND, state, v, x);
        x = step.sample();
        state = step.state();
      }
      double variance = Arrays.stream(toDoubles(x)).map(d -> d * d).sum() / n;
      assertEquals(c2, variance, 0.02, s.getClass().getSimpleName() + " final variance");
    }
  }

  @Test
  void eachStepIsTheGaussianItReportsAndItsLogProbabilityIsExact() {
    FlowSde s = new FlowSde(1000, 3.0, 0.7);
    Tensor x = noise();
    SamplerState state = s.start(STEPS, 42);
    while (!state.isFinished()) {
      Tensor v = SyntheticFlowModel.predict(BACKEND, x, state.timestep());
      Sampler.SamplerStep step = s.step(BACKEND, state, v, x);
      GaussianStep g = step.transition().orElseThrow();
      // The mean by the formula, in double from the same inputs.
      SamplerSchedule sch = state.schedule();
      int i = state.stepIndex();
      double sigma = sch.sigma(i);
      double dt = sch.sigma(i + 1) - sigma;
      double denominator = i == 0 ? sch.sigma(1) : sigma;
      double scale = 0.7 * Math.sqrt(sigma / (1 - denominator));
      double[] xs = toDoubles(x);
      double[] vs = toDoubles(v);
      double[] mean = toDoubles(g.mean());
      for (int e = 0; e < xs.length; e++) {
        double expected =
            xs[e] * (1 + scale * scale * dt / (2 * sigma))
                + vs[e] * (1 + scale * scale * (1 - sigma) / (2 * sigma)) * dt;
        assertEquals(expected, mean[e], 1e-5 * (1 + Math.abs(expected)), "mean at step " + i);
      }
      assertEquals(scale * Math.sqrt(-dt), g.std(), 1e-12);
      // The sample is mean + std·ε, and its log-density is the normal's at ε.
      double[] next = toDoubles(step.sample());
      double squares = 0;
      for (int e = 0; e < next.length; e++) {
        double z = (next[e] - mean[e]) / g.std();
        squares += z * z;
      }
      double expectedLogProb =
          -squares / (2 * next.length) - Math.log(g.std()) - 0.5 * Math.log(2 * Math.PI);
      assertEquals(expectedLogProb, g.meanLogProb(BACKEND, step.sample()), 1e-9);
      // A sample far from the mean is less likely than the one drawn.
      Tensor far = BACKEND.affine(step.sample(), 1f, (float) (5 * g.std()));
      assertTrue(g.meanLogProb(BACKEND, far) < g.meanLogProb(BACKEND, step.sample()));
      x = step.sample();
      state = step.state();
    }
  }

  @Test
  void aTrajectoryDependsOnItsSeedAndResumesFromAnyStep() {
    FlowSde s = new FlowSde(1000, 3.0, 0.7);
    float[] straight = run(s, 1, noise(), 0, s.start(STEPS, 1)).toFloatArray();
    assertArrayEquals(straight, run(s, 1, noise(), 0, s.start(STEPS, 1)).toFloatArray(), 0f);
    assertFalse(
        Arrays.equals(straight, run(s, 2, noise(), 0, s.start(STEPS, 2)).toFloatArray()),
        "another seed draws other noise");
    for (int stopAt = 1; stopAt < STEPS; stopAt++) {
      Tensor x = noise();
      SamplerState state = s.start(STEPS, 1);
      for (int i = 0; i < stopAt; i++) {
        Sampler.SamplerStep step = advance(s, state, x);
        x = step.sample();
        state = step.state();
      }
      SamplerState restored =
          SamplerState.restore(state.tensors(), state.scalars(), t -> t); // as a checkpoint
      assertArrayEquals(straight, run(s, 1, x, stopAt, restored).toFloatArray(), 0f);
    }
  }

  @Test
  void theDeterministicSamplersReportNoTransition() {
    Sampler euler = new FlowMatchEuler(1000, 3.0);
    SamplerState state = euler.start(STEPS);
    assertTrue(advance(euler, state, noise()).transition().isEmpty());
  }

  @Test
  void aNoiseLevelOfZeroIsRefused() {
    var e = assertThrows(IllegalArgumentException.class, () -> new FlowSde(1000, 1.0, 0));
    assertEquals("FlowSde needs a finite noise_level > 0, got 0.0", e.getMessage());
  }

  private static double[] toDoubles(Tensor t) {
    float[] f = BACKEND.download(t).toFloatArray();
    double[] d = new double[f.length];
    for (int i = 0; i < f.length; i++) {
      d[i] = f[i];
    }
    return d;
  }
}
