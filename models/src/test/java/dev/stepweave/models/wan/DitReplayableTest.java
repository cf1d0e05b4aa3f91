package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The denoise loop's transformer forward goes through {@link Backend#replayable} on the plain path,
 * keyed by model, component, loop, work kind, input shapes, precision and plan, and runs eagerly
 * when a block cache hooks into it; the output is the same either way.
 */
class DitReplayableTest {

  /** A CPU backend that records the keys of its replayable calls. */
  private static Backend recording(List<GraphKey> keys) {
    CpuBackend cpu = new CpuBackend();
    return (Backend)
        Proxy.newProxyInstance(
            Backend.class.getClassLoader(),
            new Class<?>[] {Backend.class},
            (proxy, method, args) -> {
              if (method.getName().equals("replayable")) {
                keys.add((GraphKey) args[0]);
              }
              try {
                return method.invoke(cpu, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  private static GenerationResult run(WanModel model, Map<String, Map<String, String>> plugins)
      throws Exception {
    try (Engine engine = new Engine(model, EngineConfig.defaults(), BlockCacheTest.CACHES)) {
      return engine
          .submit(BlockCacheTest.request("r", 7, plugins))
          .result()
          .get(120, TimeUnit.SECONDS);
    }
  }

  @Test
  void thePlainForwardIsReplayableAndAHookedOneIsNot() throws Exception {
    List<GraphKey> keys = new CopyOnWriteArrayList<>();
    try (WanModel model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, recording(keys))) {
      float[] plain = BlockCacheTest.latents(run(model, Map.of()));
      assertEquals(12, keys.size(), "6 steps x 2 guidance branches");
      GraphKey first = keys.getFirst();
      assertTrue(keys.stream().allMatch(first::equals), "every step has the same key: " + keys);
      assertEquals(model.instanceId() + "@weights-v0", first.model());
      assertEquals("transformer", first.component());
      assertEquals(WanCards.DENOISE, first.loop());
      assertEquals("DIFFUSION_STEP", first.workKind());
      assertEquals("single", first.parallelPlan());
      assertFalse(first.precision().isEmpty());
      // One branch per forward: latents, timestep and text of batch 1.
      assertTrue(first.shape().startsWith("F32[1, 16, "), first.shape());
      assertTrue(first.shape().contains(" F32[1] F32[1, "), first.shape());

      keys.clear();
      float[] hooked =
          BlockCacheTest.latents(
              run(
                  model,
                  Map.of("dbcache", Map.of("fn", "1", "threshold", "0", "warmup_steps", "0"))));
      assertEquals(List.of(), keys, "a block cache runs the forward eagerly");
      assertArrayEquals(plain, hooked);
    }
  }

  /**
   * A weight sync rebuilds the transformer in new buffers, so the forwards after it have keys of
   * their own: a graph recorded before the sync would replay the old weights (a GPU test found it:
   * {@code WeightSyncGpuTest}).
   */
  @Test
  void aWeightSyncGivesTheForwardANewKey() throws Exception {
    List<GraphKey> keys = new CopyOnWriteArrayList<>();
    try (WanModel model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, recording(keys))) {
      run(model, Map.of());
      GraphKey before = keys.getFirst();
      Map<String, Tensor> same = new LinkedHashMap<>();
      try (TensorSource weights =
          DiffusersDirectory.open(ResumeInNewProcessTest.CHECKPOINT)
              .component("transformer")
              .openWeights()) {
        weights.keys().forEach(k -> same.put(k, weights.loadF32(k)));
      }
      assertEquals(1, model.swapWeights("transformer", same));
      keys.clear();
      run(model, Map.of());
      assertEquals(model.instanceId() + "@weights-v1", keys.getFirst().model());
      assertEquals(before.shape(), keys.getFirst().shape());
    }
  }

  /**
   * One batch-2 forward per step when a request asks for it ({@code cfg_batched=true}), with the
   * same final latents bit for bit on the CPU as the default's two forwards.
   */
  @Test
  void oneBatchedForwardWhenAskedAndTheSameBitsOnTheCpu() throws Exception {
    List<GraphKey> keys = new CopyOnWriteArrayList<>();
    try (WanModel model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, recording(keys))) {
      float[] separate = BlockCacheTest.latents(run(model, Map.of()));
      keys.clear();
      float[] batched;
      try (Engine engine = new Engine(model, EngineConfig.defaults(), BlockCacheTest.CACHES)) {
        var request = BlockCacheTest.request("batched", 7, Map.of());
        var overrides = new java.util.HashMap<>(request.nodeOverrides());
        overrides.put(WanCards.DENOISE, Map.of("cfg_batched", "true"));
        batched =
            BlockCacheTest.latents(
                engine
                    .submit(request.toBuilder().nodeOverrides(overrides).build())
                    .result()
                    .get(120, TimeUnit.SECONDS));
      }
      assertEquals(6, keys.size(), "6 steps, both guidance branches in one forward each");
      assertTrue(keys.getFirst().shape().startsWith("F32[2, 16, "), keys.getFirst().shape());
      assertArrayEquals(separate, batched);
    }
  }
}
