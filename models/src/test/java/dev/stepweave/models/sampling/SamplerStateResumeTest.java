package dev.stepweave.models.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A state serialised mid-trajectory and restored continues bit-identically, and one sampler
 * interleaving two requests gives each the result it gets alone.
 */
class SamplerStateResumeTest {
  private static final Backend BACKEND = new CpuBackend();
  private static final int STEPS = 8;

  private static Sampler sampler(String kind) {
    return Samplers.fromConfig(
        SamplerParityTest.expected().resolve("sched_" + kind + "_config.json"));
  }

  private static Tensor noise(long seed) {
    return TorchGenerator.seeded(seed).randn(1, 4, 2, 3, 3);
  }

  private static Sampler.SamplerStep advance(Sampler s, SamplerState state, Tensor sample) {
    return s.step(
        BACKEND, state, SyntheticFlowModel.predict(BACKEND, sample, state.timestep()), sample);
  }

  private static float[] runStraight(Sampler s, Tensor sample) {
    SamplerState state = s.start(STEPS);
    while (!state.isFinished()) {
      Sampler.SamplerStep step = advance(s, state, sample);
      sample = step.sample();
      state = step.state();
    }
    return sample.toFloatArray();
  }

  /** Through a safetensors file: tensors as tensors, the small numbers as header metadata. */
  private static SamplerState roundTrip(SamplerState state, Path dir) {
    Path file = dir.resolve("sampler-state-" + state.stepIndex() + ".safetensors");
    Map<String, Tensor> onHost = new HashMap<>();
    state.tensors().forEach((name, t) -> onHost.put(name, BACKEND.download(t)));
    Safetensors.write(file, onHost, state.scalars());
    try (SafetensorsFile read = SafetensorsFile.open(file)) {
      Map<String, Tensor> copies = new HashMap<>();
      for (String name : read.keys()) {
        Tensor t = read.load(name);
        copies.put(name, Tensor.of(t.toFloatArray(), t.shape())); // outlive the mapping
      }
      return SamplerState.restore(copies, read.metadata(), t -> t);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"unipc", "euler"})
  void resumingASerialisedStateIsBitIdentical(String kind, @TempDir Path dir) {
    Sampler s = sampler(kind);
    float[] straight = runStraight(s, noise(7));

    for (int stopAt = 1; stopAt < STEPS; stopAt++) {
      Tensor sample = noise(7);
      SamplerState state = s.start(STEPS);
      for (int i = 0; i < stopAt; i++) {
        Sampler.SamplerStep step = advance(s, state, sample);
        sample = step.sample();
        state = step.state();
      }
      if (kind.equals("unipc")) {
        assertNotNull(state.lastSample(), "multistep state carries the corrector's sample");
      }
      SamplerState resumed = roundTrip(state, dir);
      assertEquals(state.scalars(), resumed.scalars());
      Tensor resumedSample = Tensor.of(sample.toFloatArray(), sample.shape());
      while (!resumed.isFinished()) {
        Sampler.SamplerStep step = advance(s, resumed, resumedSample);
        resumedSample = step.sample();
        resumed = step.state();
      }
      assertArrayEquals(straight, resumedSample.toFloatArray(), 0f, kind + " resumed at " + stopAt);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"unipc", "euler"})
  void oneSamplerServesInterleavedRequests(String kind) {
    Sampler s = sampler(kind);
    Tensor a = noise(1);
    Tensor b = noise(2);
    SamplerState stateA = s.start(STEPS);
    SamplerState stateB = s.start(STEPS);
    while (!stateA.isFinished()) {
      Sampler.SamplerStep stepA = advance(s, stateA, a);
      Sampler.SamplerStep stepB = advance(s, stateB, b);
      a = stepA.sample();
      stateA = stepA.state();
      b = stepB.sample();
      stateB = stepB.state();
    }
    assertArrayEquals(runStraight(s, noise(1)), a.toFloatArray(), 0f);
    assertArrayEquals(runStraight(s, noise(2)), b.toFloatArray(), 0f);
  }
}
