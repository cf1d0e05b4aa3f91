package dev.stepweave.models.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Timesteps, sigmas and a whole trajectory against diffusers' recordings (sched_*.safetensors,
 * driven by the synthetic model), within the golden bound of 1e-5.
 */
class SamplerParityTest {
  private static final double TOLERANCE = GoldenBounds.maxAbs("sampler");
  private static final Backend BACKEND = new CpuBackend();

  static Path expected() {
    return Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny-expected");
  }

  @ParameterizedTest
  @CsvSource({"unipc, 6", "unipc, 20", "euler, 6", "euler, 20"})
  void scheduleAndTrajectoryMatchTheReference(String kind, int steps) {
    Sampler sampler = Samplers.fromConfig(expected().resolve("sched_" + kind + "_config.json"));
    try (SafetensorsFile golden =
        SafetensorsFile.open(expected().resolve("sched_" + kind + "_" + steps + ".safetensors"))) {
      SamplerSchedule schedule = sampler.schedule(steps);
      assertClose(golden.load("timesteps").toFloatArray(), schedule.timesteps(), "timesteps");
      assertClose(golden.load("sigmas").toFloatArray(), schedule.sigmas(), "sigmas");

      Tensor trajectory = golden.load("trajectory");
      Tensor sample = golden.load("initial");
      SamplerState state = sampler.start(steps);
      for (int i = 0; i < steps; i++) {
        Tensor velocity = SyntheticFlowModel.predict(BACKEND, sample, state.timestep());
        Sampler.SamplerStep step = sampler.step(BACKEND, state, velocity, sample);
        sample = step.sample();
        state = step.state();
        assertClose(
            trajectory.select(0, i).toFloatArray(), sample.toFloatArray(), "trajectory step " + i);
      }
      assertTrue(state.isFinished());
    }
  }

  private static void assertClose(float[] expected, float[] actual, String what) {
    assertEquals(expected.length, actual.length, what + " length");
    double worst = 0;
    for (int i = 0; i < expected.length; i++) {
      worst = Math.max(worst, Math.abs((double) expected[i] - actual[i]));
    }
    assertTrue(worst <= TOLERANCE, what + ": max abs error " + worst + " > " + TOLERANCE);
  }
}
