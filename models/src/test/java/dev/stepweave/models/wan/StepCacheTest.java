package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The step cache on the tiny Wan checkpoint (6 UniPC steps, two CFG branches): exact when it never
 * reuses, counted when it does, per request under interleaving, batching and state round trips, and
 * refused where reuse is not allowed.
 */
class StepCacheTest {
  private static final Map<String, String> EVERY_OTHER_PAIR =
      Map.of("threshold", "10", "warmup_steps", "1", "max_consecutive_cached_steps", "2");

  @BeforeAll
  static void load() {
    BlockCacheTest.model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    BlockCacheTest.model.close();
  }

  private static Request request(String id, long seed, Map<String, String> settings) {
    return BlockCacheTest.request(
        id, seed, settings == null ? Map.of() : Map.of("stepcache", settings));
  }

  private static Map<String, Long> report(GenerationResult r) {
    return r.loopResults().get(WanCards.DENOISE).report();
  }

  @Test
  void thresholdZeroIsBitIdenticalToUncached() throws Exception {
    float[] plain = BlockCacheTest.latents(BlockCacheTest.run(request("plain", 7, null)));
    GenerationResult cached =
        BlockCacheTest.run(request("t0", 7, Map.of("threshold", "0", "warmup_steps", "0")));
    assertArrayEquals(plain, BlockCacheTest.latents(cached));
    assertEquals(0L, report(cached).getOrDefault("stepcache.cached_steps", 0L));
    assertEquals(6L, report(cached).get("stepcache.computed_steps"), "one guided slot, 6 steps");
  }

  @Test
  void aHighThresholdSkipsStepsAndCountsThem() throws Exception {
    GenerationResult r = BlockCacheTest.run(request("high", 7, EVERY_OTHER_PAIR));
    // Step 0 computes (warm-up), then reuse, reuse, compute, reuse, reuse.
    assertEquals(4L, report(r).get("stepcache.cached_steps"));
    assertEquals(2L, report(r).get("stepcache.computed_steps"));
    float[] plain = BlockCacheTest.latents(BlockCacheTest.run(request("plain", 7, null)));
    assertFalse(java.util.Arrays.equals(plain, BlockCacheTest.latents(r)), "reuse changes output");
  }

  @Test
  void reusedStepsRunNoTransformerAndInterleavedRequestsEqualEachAlone() {
    Request a = request("a", 1, Map.of("threshold", "10", "taylorseer_order", "2"));
    Request b = request("b", 2, EVERY_OTHER_PAIR);
    Map<String, float[]> aAlone = denoise(List.of(a), false);
    Map<String, float[]> bAlone = denoise(List.of(b), false);
    Map<String, float[]> together = denoise(List.of(a, b), true);
    assertArrayEquals(aAlone.get("a"), together.get("a"));
    assertArrayEquals(bAlone.get("b"), together.get("b"));
  }

  @Test
  void concurrentRequestsThroughTheEngineEqualEachAlone() throws Exception {
    Request a = request("a", 1, Map.of("threshold", "10", "taylorseer_order", "1"));
    Request b = request("b", 2, EVERY_OTHER_PAIR);
    GenerationResult aAlone = BlockCacheTest.run(a);
    GenerationResult bAlone = BlockCacheTest.run(b);
    try (Engine engine =
        new Engine(BlockCacheTest.model, EngineConfig.defaults(), BlockCacheTest.CACHES)) {
      RequestHandle ha = engine.submit(a);
      RequestHandle hb = engine.submit(b);
      GenerationResult aTogether = ha.result().get(120, TimeUnit.SECONDS);
      GenerationResult bTogether = hb.result().get(120, TimeUnit.SECONDS);
      assertArrayEquals(BlockCacheTest.latents(aAlone), BlockCacheTest.latents(aTogether));
      assertArrayEquals(BlockCacheTest.latents(bAlone), BlockCacheTest.latents(bTogether));
      assertEquals(report(aAlone), report(aTogether));
      assertEquals(report(bAlone), report(bTogether));
      assertTrue(report(aAlone).get("stepcache.cached_steps") > 0, "the cache reused");
    }
  }

  @Test
  void anExactRequestRefusesTheStepCache() {
    var e =
        assertThrows(
            InvalidRequestException.class,
            () ->
                BlockCacheTest.CACHES.admit(
                    request("exact", 1, Map.of()).toBuilder().exact(true).build(),
                    BlockCacheTest.model.card()));
    assertEquals(
        "an exact request refuses plugin 'stepcache': it alters the output distribution",
        e.getMessage());
  }

  @Test
  void aFewStepDistilledCardRefusesTheStepCache() {
    ModelCard card = BlockCacheTest.model.card();
    ModelCard distilled =
        new ModelCard(
            card.modelId(),
            card.family(),
            card.components(),
            card.loops(),
            card.capabilities(),
            new RecipeSpec("dmd2", List.of(), "test", null, null, 4, null, ConsistencyRung.C1),
            card.parity(),
            card.caches(),
            card.parallelism(),
            card.precision(),
            card.checkpoint(),
            card.defaults());
    var e =
        assertThrows(
            InvalidRequestException.class,
            () -> BlockCacheTest.CACHES.admit(request("d", 1, Map.of()), distilled));
    assertTrue(e.getMessage().contains("refuses plugin 'stepcache'"), e.getMessage());
  }

  @Test
  void theStepCacheConflictsWithNoBlockCacheButRunsBesideOne() {
    Request both =
        BlockCacheTest.request(
            "both", 1, Map.of("stepcache", Map.of(), "fbcache", Map.of("threshold", "0.1")));
    assertEquals(2, BlockCacheTest.CACHES.admit(both, BlockCacheTest.model.card()).size());
  }

  /**
   * Denoises several requests one step of each in turn; with {@code roundTrip} every state goes
   * through {@code serialize}/{@code deserialize} between steps. Asserts that every reused step's
   * plan holds no transformer call and that each request reused at least one step.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Map<String, float[]> denoise(List<Request> requests, boolean roundTrip) {
    WanModel model = BlockCacheTest.model;
    var loop = (DenoiseLoop) model.loop(WanCards.DENOISE);
    var states = new HashMap<String, DenoiseLoop.State>();
    var contexts = new HashMap<String, dev.stepweave.core.loop.LoopContext>();
    for (Request r : requests) {
      var textCtx = BlockCacheTest.context(r, Map.of());
      LoopResult text =
          BlockCacheTest.runLoop(
              (TextEncodeLoop) model.loop(WanCards.TEXT_ENCODE), r, model, textCtx);
      var ctx = BlockCacheTest.context(r, Map.of(WanCards.TEXT_ENCODE, text));
      contexts.put(r.id(), ctx);
      states.put(r.id(), loop.init(r, model, ctx));
    }
    Map<String, Integer> reusedPlans = new HashMap<>();
    boolean running = true;
    while (running) {
      running = false;
      for (Request r : requests) {
        var s = states.get(r.id());
        if (loop.next(s) instanceof WorkPlan plan) {
          if (!(plan.call() instanceof DitCall)) {
            reusedPlans.merge(r.id(), 1, Integer::sum);
          }
          var after = loop.advance(s, plan.call().run());
          if (roundTrip) {
            after = loop.deserialize(loop.serialize(after), r, model, contexts.get(r.id()));
          }
          states.put(r.id(), after);
          running = true;
        }
      }
    }
    Map<String, float[]> out = new HashMap<>();
    states.forEach(
        (id, s) -> {
          long cached = s.plugins().report().getOrDefault("stepcache.cached_steps", 0L);
          assertTrue(cached > 0, id + " reused no step");
          assertEquals(cached, (long) reusedPlans.get(id), id + ": reused steps without DitCall");
          out.put(id, model.backend().download(s.latents()).toFloatArray());
        });
    return out;
  }
}
