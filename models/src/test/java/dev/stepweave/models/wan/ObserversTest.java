package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.ActivationTrace;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.NaNWatch;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The read-only observers on the tiny Wan checkpoint: they see every step and tap, localise the
 * first non-finite value, and change nothing about the output.
 */
class ObserversTest {

  @Test
  void observersMeasureTraceAndLocaliseWithoutChangingTheOutput() throws Exception {
    Profiler profiler = new Profiler();
    ActivationTrace trace = new ActivationTrace();
    NaNWatch nans = new NaNWatch();
    Extensions observed =
        Extensions.builder().observe(profiler).observe(trace).observe(nans).build();
    Request clean = ResumeInNewProcessTest.request();
    Request poisoned = withLatents(clean, "poisoned");
    try (WanModel model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, new CpuBackend())) {
      Tensor plain;
      try (Engine engine = new Engine(model, EngineConfig.defaults())) {
        plain = frames(engine, clean);
      }
      try (Engine engine = new Engine(model, EngineConfig.defaults(), observed)) {
        assertArrayEquals(
            plain.toFloatArray(),
            frames(engine, clean).toFloatArray(),
            "observers changed the output");
        try {
          engine.submit(poisoned).result().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException expected) {
          // a NaN in its latents fails the request at its first denoising step
        }
      }
    }
    // Profiler: one measurement series per (loop, kind, shape); the 4 denoising steps are there.
    long diffusionSteps =
        profiler.measurements().stream()
            .filter(m -> m.kind() == WorkKind.DIFFUSION_STEP)
            .mapToLong(m -> m.count())
            .sum();
    assertTrue(diffusionSteps >= clean.params().steps(), profiler.measurements().toString());
    // ActivationTrace: the DiT's taps of the clean request, every step, finite statistics.
    List<ActivationTrace.Entry> blocks = new ArrayList<>();
    for (ActivationTrace.Entry e : trace.entries()) {
      if (e.requestId().equals(clean.id()) && e.tap().equals("block_1")) {
        blocks.add(e);
      }
    }
    assertTrue(blocks.size() >= clean.params().steps(), trace.entries().size() + " entries");
    assertTrue(blocks.stream().allMatch(e -> Double.isFinite(e.maxAbs()) && e.maxAbs() > 0));
    // NaNWatch: nothing for the clean request; the poisoned one localised to its first tap.
    assertTrue(nans.firstFor(clean.id()).isEmpty());
    var first = nans.firstFor(poisoned.id()).orElseThrow();
    assertEquals(WanCards.DENOISE, first.loopId());
    assertEquals(0, first.stepIndex());
    assertTrue(Float.isNaN(first.value()), first.toString());
  }

  private static Tensor frames(Engine engine, Request r) throws Exception {
    return engine
        .submit(r)
        .result()
        .get(60, TimeUnit.SECONDS)
        .artifact(Artifact.VideoArtifact.class)
        .frames();
  }

  /** The same request with starting latents that hold one NaN. */
  private static Request withLatents(Request r, String id) {
    var p = r.params();
    int[] shape = {1, 16, (p.frames() - 1) / 4 + 1, p.height() / 8, p.width() / 8};
    Tensor latents = TorchGenerator.seeded(p.seed()).randn(shape);
    latents.setFloat(Float.NaN, 0, 3, 1, 2, 2);
    List<ModalPart> inputs = new ArrayList<>(r.inputs());
    inputs.add(new ModalPart.Latents(latents));
    return Request.builder(r.task(), p)
        .id(id)
        .inputs(inputs)
        .output(r.output())
        .nodeOverrides(r.nodeOverrides())
        .overrideRecipe(r.overrideRecipe())
        .build();
  }
}
