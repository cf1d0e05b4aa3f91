package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineStats;
import dev.stepweave.core.runtime.NonFiniteStepException;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The interleave gate: requests of different prompts, seeds, sizes, step counts and guidance run
 * concurrently — interleaved and batched at step granularity — give bit-identical frames to the
 * same requests run one at a time; and a request whose step turns non-finite fails alone, its batch
 * partners unharmed.
 */
class InterleaveGateTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");
  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  private static Request request(
      String id,
      String prompt,
      long seed,
      int width,
      int height,
      int frames,
      int steps,
      double cfg,
      Map<String, String> denoise) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                steps,
                cfg,
                seed,
                width,
                height,
                frames,
                8,
                "blurry",
                Optional.empty(),
                Optional.empty()))
        .id(id)
        .prompt(prompt)
        .nodeOverrides(
            Map.of(
                WanCards.TEXT_ENCODE,
                Map.of("max_sequence_length", "16"),
                WanCards.DENOISE,
                denoise))
        .build();
  }

  private static List<Request> mix() {
    return List.of(
        request("a", "a red ball bouncing", 1234, 32, 32, 9, 4, 5.0, Map.of()),
        request("b", "a blue cube spinning", 7, 32, 32, 9, 3, 4.0, Map.of()),
        request("c", "waves on a beach", 99, 48, 32, 5, 5, 5.0, Map.of()),
        request("d", "a green tree", 3, 32, 32, 9, 4, 6.0, Map.of("cfg", "zero_star")),
        request("e", "a cat", 5, 32, 32, 9, 2, 1.0, Map.of()));
  }

  @Test
  void interleavedBatchedRequestsGiveTheirSerialFramesBitForBit() throws Exception {
    List<float[]> serial = new ArrayList<>();
    try (Engine engine = new Engine(model)) {
      for (Request r : mix()) {
        serial.add(ServedAlone.frames(engine.submit(r)));
      }
      assertEquals(0, ServedAlone.batchedUnits(engine.stats()), "one at a time never batches");
    }
    try (Engine engine = new Engine(model)) {
      List<RequestHandle> hs = new ArrayList<>();
      for (Request r : mix()) {
        hs.add(engine.submit(r));
      }
      // A sixth request with the shape of a and b but NaN starting latents: its first step is
      // non-finite; it fails alone while the others, batched with it, finish unharmed.
      Request poisoned =
          Request.builder(TaskType.T2V, mix().get(0).params())
              .id("poisoned")
              .inputs(
                  List.of(
                      new ModalPart.Text("poison"),
                      new ModalPart.Latents(Tensor.full(Float.NaN, 1, 16, 3, 4, 4))))
              .nodeOverrides(mix().get(0).nodeOverrides())
              .build();
      RequestHandle bad = engine.submit(poisoned);
      for (int i = 0; i < hs.size(); i++) {
        assertArrayEquals(
            serial.get(i), ServedAlone.frames(hs.get(i)), "request " + mix().get(i).id());
      }
      var e = assertThrows(ExecutionException.class, () -> bad.result().get(60, TimeUnit.SECONDS));
      assertInstanceOf(NonFiniteStepException.class, e.getCause());
      List<RequestEvent> events = bad.eventsSoFar();
      assertInstanceOf(RequestEvent.Failed.class, events.getLast());
      var partial = (RequestEvent.ArtifactReady) events.get(events.size() - 2);
      assertInstanceOf(Artifact.LatentArtifact.class, partial.artifact());
      EngineStats s = engine.stats();
      assertTrue(ServedAlone.batchedUnits(s) > 0, "no step was batched");
      assertEquals(5, s.completed());
      assertEquals(1, s.failed());
      assertTrue(s.stepSeconds().get(WorkKind.DIFFUSION_STEP).count() > 0);
    }
  }

  @Test
  void aBatchedDitStepEqualsEachCallRunAlone() {
    var ops = model.backend();
    int textDim = model.transformer().config().textDim();
    TorchGenerator g = TorchGenerator.seeded(11);
    List<DitCall> calls = new ArrayList<>();
    CfgPolicy[] policies = {
      new CfgPolicy.Classic(5.0, false),
      new CfgPolicy.CondOnly(),
      new CfgPolicy.CfgZeroStar(4.0, 0, true),
      new CfgPolicy.Rescaled(6.0, 0.7, false)
    };
    for (int i = 0; i < policies.length; i++) {
      calls.add(
          new DitCall(
              model,
              ops.upload(g.randn(1, 16, 3, 4, 4), dev.stepweave.tensor.DType.F32),
              900f - 100 * i,
              ops.upload(g.randn(1, 16, textDim), dev.stepweave.tensor.DType.F32),
              ops.upload(g.randn(1, 16, textDim), dev.stepweave.tensor.DType.F32),
              null, // text-to-video: no condition
              null,
              null,
              policies[i],
              i,
              new dev.stepweave.core.extend.PluginState(),
              dev.stepweave.models.wan.cache.DenoiseHooks.NONE,
              dev.stepweave.core.parity.TapSink.NONE,
              ExpertRouting.FIRST,
              List.of()));
    }
    List<StepResult> batched = calls.get(0).runBatch(List.<BatchableCall>copyOf(calls));
    for (int i = 0; i < calls.size(); i++) {
      assertArrayEquals(
          ops.download(calls.get(i).run().output()).toFloatArray(),
          ops.download(batched.get(i).output()).toFloatArray(),
          "call " + i + " (" + policies[i] + ")");
    }
  }
}
