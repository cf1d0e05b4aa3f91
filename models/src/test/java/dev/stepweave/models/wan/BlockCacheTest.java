package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.Done;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopContext;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.LoopStepper;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.EngineStats;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.models.wan.cache.BlockCachePlugin;
import dev.stepweave.models.wan.cache.StepCachePlugin;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Block caches on the tiny Wan checkpoint: exact when they never reuse, counted when they do, and
 * per request and per CFG branch under interleaving.
 */
class BlockCacheTest {
  static final Extensions CACHES =
      Extensions.builder()
          .enable(BlockCachePlugin.DBCACHE)
          .enable(BlockCachePlugin.FBCACHE)
          .enable(StepCachePlugin.STEPCACHE)
          .build();
  static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  static Request request(String id, long seed, Map<String, Map<String, String>> plugins) {
    Request r = ResumeInNewProcessTest.request();
    var p = r.params();
    return Request.builder(
            r.task(),
            new dev.stepweave.core.request.DiffusionParams(
                6,
                p.guidance(),
                seed,
                p.width(),
                p.height(),
                p.frames(),
                p.fps(),
                p.negativePrompt(),
                p.sampler(),
                p.shift()))
        .id(id)
        .inputs(r.inputs())
        .output(dev.stepweave.core.request.OutputSpec.WITH_LATENTS)
        .nodeOverrides(r.nodeOverrides())
        .plugins(plugins)
        .build();
  }

  static GenerationResult run(Request r) throws Exception {
    try (Engine engine = new Engine(model, EngineConfig.defaults(), CACHES)) {
      return engine.submit(r).result().get(120, TimeUnit.SECONDS);
    }
  }

  static float[] latents(GenerationResult r) {
    return r.artifact(Artifact.LatentArtifact.class).latents().toFloatArray();
  }

  @Test
  void thresholdZeroIsBitIdenticalToUncached() throws Exception {
    float[] plain = latents(run(request("plain", 7, Map.of())));
    GenerationResult cached =
        run(
            request(
                "t0",
                7,
                Map.of("dbcache", Map.of("fn", "1", "threshold", "0", "warmup_steps", "0"))));
    assertArrayEquals(plain, latents(cached));
    LoopResult denoise = cached.loopResults().get(WanCards.DENOISE);
    assertEquals(0L, denoise.report().getOrDefault("dbcache.skipped_blocks", 0L));
    assertEquals(12L, denoise.report().get("dbcache.computed_steps"), "6 steps x 2 branches");
  }

  @Test
  void aHighThresholdSkipsBlocksAndCountsThem() throws Exception {
    Extensions deployed = CACHES;
    GenerationResult r;
    try (Engine engine = new Engine(model, EngineConfig.defaults(), deployed)) {
      r =
          engine
              .submit(
                  request(
                      "high",
                      7,
                      Map.of(
                          "fbcache",
                          Map.of(
                              "threshold", "10",
                              "warmup_steps", "1",
                              "max_consecutive_cached_steps", "2"))))
              .result()
              .get(120, TimeUnit.SECONDS);
      Map<String, Long> report = r.loopResults().get(WanCards.DENOISE).report();
      // Per branch: step 0 computes (warm-up), then reuse, reuse, compute, reuse, reuse.
      assertEquals(8L, report.get("fbcache.cached_steps"));
      assertEquals(8L, report.get("fbcache.skipped_blocks"), "one middle block per reuse");
      assertEquals(4L, report.get("fbcache.computed_steps"));
      assertEquals(24L, report.get("fbcache.blocks"));
      var provenance = r.artifact(Artifact.VideoArtifact.class).provenance();
      assertEquals("8", provenance.settings().get("fbcache.skipped_blocks"));
      assertEquals(8L, engine.extensions().metrics().snapshot().get("fbcache.skipped_blocks"));
    }
    float[] plain = latents(run(request("plain", 7, Map.of())));
    assertFalse(java.util.Arrays.equals(plain, latents(r)), "reuse changes the output");
  }

  @Test
  void requestsWithBlockCachesBatchedByTheSchedulerEqualEachAlone() throws Exception {
    // Same block layout (F1B0) so they share a forward; different seeds, warm-ups and reuse rules,
    // so each batch row must decide from its own request's settings, slot and step.
    Request a =
        request(
            "a",
            1,
            Map.of("dbcache", Map.of("fn", "1", "threshold", "10", "taylorseer_order", "2")));
    Request b =
        request(
            "b",
            2,
            Map.of(
                "dbcache",
                Map.of(
                    "fn", "1",
                    "threshold", "10",
                    "warmup_steps", "1",
                    "max_consecutive_cached_steps", "2")));
    GenerationResult aAlone = run(a);
    GenerationResult bAlone = run(b);
    try (Engine engine = new Engine(model, EngineConfig.defaults(), CACHES)) {
      RequestHandle ha = engine.submit(a);
      RequestHandle hb = engine.submit(b);
      GenerationResult aTogether = ha.result().get(120, TimeUnit.SECONDS);
      GenerationResult bTogether = hb.result().get(120, TimeUnit.SECONDS);
      EngineStats stats = engine.stats();
      long batched = stats.batchSizes().count() - stats.batchSizes().cumulativeCounts()[0];
      assertTrue(batched > 0, "no denoise step was batched");
      assertArrayEquals(latents(aAlone), latents(aTogether));
      assertArrayEquals(latents(bAlone), latents(bTogether));
      for (var pair : List.of(List.of(aAlone, aTogether), List.of(bAlone, bTogether))) {
        Map<String, Long> alone = pair.get(0).loopResults().get(WanCards.DENOISE).report();
        assertTrue(alone.get("dbcache.skipped_blocks") > 0, "the cache reused");
        assertEquals(alone, pair.get(1).loopResults().get(WanCards.DENOISE).report());
      }
    }
  }

  @Test
  void interleavedRequestsGiveTheSameResultsAsEachAlone() {
    Map<String, Map<String, String>> taylor =
        Map.of("dbcache", Map.of("fn", "1", "threshold", "10", "taylorseer_order", "2"));
    Request a = request("a", 1, taylor);
    Request b =
        request("b", 2, taylor).toBuilder()
            .nodeOverrides(
                Map.of(
                    WanCards.TEXT_ENCODE,
                    Map.of("max_sequence_length", "16"),
                    WanCards.DENOISE,
                    Map.of("cfg_batched", "true")))
            .build();
    float[] aliceAlone = denoiseInterleaved(List.of(a)).get("a");
    float[] bobAlone = denoiseInterleaved(List.of(b)).get("b");
    Map<String, float[]> together = denoiseInterleaved(List.of(a, b));
    assertArrayEquals(aliceAlone, together.get("a"));
    assertArrayEquals(bobAlone, together.get("b"));
  }

  /** Runs the text and denoise loops of several requests, denoising one step of each in turn. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static Map<String, float[]> denoiseInterleaved(List<Request> requests) {
    var loop = (DenoiseLoop) model.loop(WanCards.DENOISE);
    var states = new HashMap<String, DenoiseLoop.State>();
    for (Request r : requests) {
      LoopContext textCtx = context(r, Map.of());
      LoopResult text =
          runLoop((TextEncodeLoop) model.loop(WanCards.TEXT_ENCODE), r, model, textCtx);
      states.put(r.id(), loop.init(r, model, context(r, Map.of(WanCards.TEXT_ENCODE, text))));
    }
    boolean running = true;
    while (running) {
      running = false;
      for (Request r : requests) {
        var s = states.get(r.id());
        if (loop.next(s) instanceof WorkPlan plan) {
          states.put(r.id(), loop.advance(s, plan.call().run()));
          running = true;
        } else {
          assertTrue(loop.next(s) instanceof Done);
        }
      }
    }
    Map<String, float[]> out = new HashMap<>();
    states.forEach((id, s) -> out.put(id, model.backend().download(s.latents()).toFloatArray()));
    assertTrue(
        states.values().stream()
            .allMatch(s -> s.plugins().report().get("dbcache.skipped_blocks") > 0),
        "the caches reused");
    return out;
  }

  /** Runs one loop of one request to its end, each step alone. */
  static <S extends LoopState> LoopResult runLoop(
      Loop<S> loop, Request r, WanModel on, LoopContext ctx) {
    LoopStepper<S> stepper = LoopStepper.start(loop, r, on, ctx, null);
    for (WorkPlan plan = stepper.next(); plan != null; plan = stepper.next()) {
      stepper.advance(plan.call().run());
    }
    return stepper.finish();
  }

  static LoopContext context(Request r, Map<String, LoopResult> upstream) {
    CancelScope scope = new CancelScope(r.id());
    return new LoopContext() {
      @Override
      public StepResult execute(WorkPlan plan) {
        return plan.call().run();
      }

      @Override
      public void emit(RequestEvent event) {}

      @Override
      public CancelScope cancelScope() {
        return scope;
      }

      @Override
      public Map<String, LoopResult> upstream() {
        return upstream;
      }

      @Override
      public Extensions extensions() {
        return CACHES;
      }
    };
  }
}
