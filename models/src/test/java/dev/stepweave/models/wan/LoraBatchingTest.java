package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.AppliedAdapter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.models.wan.lora.WanAdapters;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The interleave gate with adapters: requests with four different adapter sets (none, one, the
 * other at another strength, both stacked) batched into the same transformer calls give each
 * request the frames it gets served alone, bit for bit on the CPU; the artifacts name the adapters;
 * and the shared weights are never changed.
 */
class LoraBatchingTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan21-lora-tiny");
  static final Path A = CHECKPOINT.resolve("loras/adapter_a_diffusers.safetensors");
  static final Path B = CHECKPOINT.resolve("loras/adapter_b_wan_original.safetensors");
  private static WanModel model;
  private static AdapterRegistry registry;

  @BeforeAll
  static void load() {
    model = WanModel.load(CHECKPOINT, new CpuBackend());
    registry = AdapterRegistry.open(model::inspectAdapter, Map.of("a", A, "b", B), List.of());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  private static final List<List<AdapterUse>> SETS =
      List.of(
          List.of(),
          List.of(new AdapterUse("a", 1.0)),
          List.of(new AdapterUse("b", 0.7)),
          List.of(new AdapterUse("a", 0.8), new AdapterUse("b", 0.5)));

  private static Request request(String id, List<AdapterUse> adapters, int steps, double cfg) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                steps, cfg, 42, 32, 32, 9, 8, "noisy", Optional.empty(), Optional.empty()))
        .id(id)
        .prompt("a red ball bouncing")
        .nodeOverrides(Map.of(WanCards.TEXT_ENCODE, Map.of("max_sequence_length", "16")))
        .adapters(adapters)
        .build();
  }

  private static Engine engine() {
    return new Engine(
        model, EngineConfig.defaults(), Extensions.builder().adapters(registry).build());
  }

  private static GenerationResult result(RequestHandle h) throws Exception {
    return h.result().get(120, TimeUnit.SECONDS);
  }

  private static float[] frames(GenerationResult r) {
    return r.artifact(Artifact.VideoArtifact.class).frames().toFloatArray();
  }

  @Test
  void fourAdapterSetsBatchedTogetherGiveTheirServedAloneFramesBitForBit() throws Exception {
    List<float[]> alone = new ArrayList<>();
    for (int i = 0; i < SETS.size(); i++) {
      try (Engine engine = engine()) {
        alone.add(frames(result(engine.submit(request("alone-" + i, SETS.get(i), 3, 5.0)))));
      }
    }
    for (int i = 0; i < alone.size(); i++) {
      for (int j = i + 1; j < alone.size(); j++) {
        assertFalse(
            java.util.Arrays.equals(alone.get(i), alone.get(j)),
            "sets " + SETS.get(i) + " and " + SETS.get(j) + " made the same frames");
      }
    }
    try (Engine engine = engine()) {
      List<RequestHandle> hs = new ArrayList<>();
      for (int i = 0; i < SETS.size(); i++) {
        hs.add(engine.submit(request("mixed-" + i, SETS.get(i), 3, 5.0)));
      }
      for (int i = 0; i < hs.size(); i++) {
        GenerationResult r = result(hs.get(i));
        assertArrayEquals(alone.get(i), frames(r), "set " + SETS.get(i));
        List<AppliedAdapter> applied =
            r.artifact(Artifact.VideoArtifact.class).provenance().adapters();
        assertEquals(
            SETS.get(i).stream().map(AdapterUse::name).toList(),
            applied.stream().map(AppliedAdapter::name).toList());
        for (int k = 0; k < applied.size(); k++) {
          assertEquals(SETS.get(i).get(k).scale(), applied.get(k).scale());
          assertEquals(
              registry.get(applied.get(k).name()).orElseThrow().sha256(), applied.get(k).sha256());
        }
      }
      var s = engine.stats();
      assertTrue(
          ServedAlone.batchedUnits(s) > 0, "no step batched requests with different adapters");
    }
    // Had any adapter been merged into the shared weights, the plain request would now differ.
    try (Engine engine = engine()) {
      assertArrayEquals(
          alone.get(0),
          frames(result(engine.submit(request("plain-again", List.of(), 3, 5.0)))),
          "the shared weights changed");
    }
  }

  /** A batched step of four calls with four adapter sets equals each call run alone. */
  @Test
  void aBatchedDitStepWithMixedAdaptersEqualsEachCallAlone() {
    var ops = model.backend();
    int textDim = model.transformer().config().textDim();
    TorchGenerator g = TorchGenerator.seeded(5);
    List<WanAdapters.Held> held = new ArrayList<>();
    List<DitCall> calls = new ArrayList<>();
    for (int i = 0; i < SETS.size(); i++) {
      List<AdapterRows.Applied> applied = new ArrayList<>();
      for (AdapterUse u : SETS.get(i)) {
        WanAdapters.Held h =
            model
                .adapters()
                .acquire(new ResolvedAdapter(registry.get(u.name()).orElseThrow(), u.scale()));
        held.add(h);
        applied.add(new AdapterRows.Applied(h.adapter(), (float) u.scale()));
      }
      calls.add(
          new DitCall(
              model,
              ops.upload(g.randn(1, 16, 3, 4, 4), DType.F32),
              800f - 50 * i,
              ops.upload(g.randn(1, 7, textDim), DType.F32),
              ops.upload(g.randn(1, 7, textDim), DType.F32),
              null, // text-to-video: no condition
              null,
              null,
              i % 2 == 0 ? new CfgPolicy.Classic(5.0, false) : new CfgPolicy.CondOnly(),
              i,
              new dev.stepweave.core.extend.PluginState(),
              dev.stepweave.models.wan.cache.DenoiseHooks.NONE,
              dev.stepweave.core.parity.TapSink.NONE,
              ExpertRouting.FIRST,
              applied));
    }
    try {
      List<StepResult> batched = calls.get(0).runBatch(List.<BatchableCall>copyOf(calls));
      for (int i = 0; i < calls.size(); i++) {
        assertArrayEquals(
            ops.download(calls.get(i).run().output()).toFloatArray(),
            ops.download(batched.get(i).output()).toFloatArray(),
            "call " + i + " with " + SETS.get(i));
      }
    } finally {
      held.forEach(WanAdapters.Held::close);
    }
  }

  @Test
  void anUnknownAdapterIsRefusedAtSubmitNamingTheField() {
    try (Engine engine = engine()) {
      var e =
          assertThrows(
              InvalidRequestException.class,
              () -> engine.submit(request("x", List.of(new AdapterUse("c", 1.0)), 2, 5.0)));
      assertEquals(Optional.of("loras[0].name"), e.field());
      assertEquals("unknown adapter 'c' (registered: a, b)", e.getMessage());
    }
  }

  @Test
  void anAdapterRecipeRefusesOtherSettingsUnlessOverriddenAndTheOverrideIsRecorded(
      @TempDir Path dir) throws Exception {
    Path distilled = dir.resolve("fast.safetensors");
    Files.copy(A, distilled);
    Files.writeString(
        dir.resolve("fast.recipe.json"),
        "{\"method\": \"distill\", \"sampler\": \"unipc\", \"steps\": 2, \"guidance\": 1.0}");
    AdapterRegistry withRecipe =
        AdapterRegistry.open(model::inspectAdapter, Map.of(), List.of(dir));
    try (Engine engine =
        new Engine(
            model, EngineConfig.defaults(), Extensions.builder().adapters(withRecipe).build())) {
      var refused =
          assertThrows(
              RecipeRefusedException.class,
              () -> engine.submit(request("r", List.of(new AdapterUse("fast", 1.0)), 3, 5.0)));
      assertEquals(
          "adapter 'fast' (recipe 'distill') refuses steps 3 (recipe assumes 2), guidance 5.0"
              + " (recipe assumes 1.0); override the recipe explicitly to run it anyway",
          refused.getMessage());
      GenerationResult ok =
          result(engine.submit(request("ok", List.of(new AdapterUse("fast", 1.0)), 2, 1.0)));
      assertEquals(List.of(), ok.recipeOverrides());
      Request overriding =
          request("o", List.of(new AdapterUse("fast", 1.0)), 3, 5.0).toBuilder()
              .overrideRecipe(true)
              .build();
      GenerationResult over = result(engine.submit(overriding));
      assertEquals(
          List.of(
              "adapter fast: steps 3 (recipe assumes 2)",
              "adapter fast: guidance 5.0 (recipe assumes 1.0)"),
          over.recipeOverrides());
      assertEquals(
          over.recipeOverrides(),
          over.artifact(Artifact.VideoArtifact.class).provenance().recipeOverrides());
    }
  }
}
