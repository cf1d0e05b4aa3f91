package dev.stepweave.training.rl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A K-wide group through the engine: one text encoding for the group, its denoise steps batched K
 * wide, and each sample what it is alone.
 */
class GroupRolloutTest {
  private static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");
  private static final int K = 4;

  private static Request template() {
    return request("group", 0);
  }

  private static Request request(String id, long seed) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                3, 5.0, seed, 32, 32, 5, 8, "blurry", Optional.of("sde"), Optional.empty()))
        .id(id)
        .prompt("a red ball bouncing")
        .nodeOverrides(Map.of("text_encode", Map.of("max_sequence_length", "16")))
        .build();
  }

  @Test
  void aGroupSharesOneTextEncodingAndBatchesItsSteps() throws Exception {
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model)) {
      List<GroupRollout.Sample> group =
          GroupRollout.run(
              engine, template(), K, 100, BehaviorCapture.TRAJECTORY, Duration.ofMinutes(2));
      assertEquals(K, group.size());
      var text = model.textEmbeddingCache().metrics();
      assertEquals(2, text.misses(), "the prompt and the negative prompt, encoded once each");
      assertEquals(2 * (K - 1), text.hits());
      long batchedSteps =
          engine.profiler().callMeasurements().stream()
              .filter(c -> c.kind() == WorkKind.DIFFUSION_STEP && c.batchSize() == K)
              .mapToLong(Profiler.CallMeasurement::count)
              .sum();
      assertEquals(3, batchedSteps, "every denoise step ran the group as one " + K + "-wide call");

      // Each sample is what the same request gives alone, seed for seed.
      for (int i = 0; i < K; i++) {
        GroupRollout.Sample s = group.get(i);
        assertEquals(100 + i, s.seed());
        var alone =
            engine.submit(request("alone-" + i, s.seed())).result().get(120, TimeUnit.SECONDS);
        assertArrayEquals(
            alone.artifact(Artifact.VideoArtifact.class).frames().toFloatArray(),
            s.video().frames().toFloatArray(),
            0f);
        assertEquals(3, s.behavior().logProbs().length);
      }
    }
  }

  @Test
  void badGroupsAreRefused() {
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model)) {
      var none =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  GroupRollout.run(
                      engine, template(), 2, 0, BehaviorCapture.NONE, Duration.ofSeconds(5)));
      assertEquals("a rollout group captures behaviour: FINAL or TRAJECTORY", none.getMessage());
      var empty =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  GroupRollout.run(
                      engine, template(), 0, 0, BehaviorCapture.FINAL, Duration.ofSeconds(5)));
      assertEquals("a group needs at least one sample, got 0", empty.getMessage());
      assertEquals(0, engine.stats().admitted());
    }
  }
}
