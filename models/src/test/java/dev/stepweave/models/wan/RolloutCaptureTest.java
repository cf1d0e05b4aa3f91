package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.ProgramCheckpoint;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The rollout forward is the serve forward plus capture (design §9.4, §10; rung C2's first half):
 * on the CPU, capturing a request's behaviour changes none of its outputs, the record holds what
 * the loop did, and it survives interleaving and a checkpoint resume unchanged.
 */
class RolloutCaptureTest {
  static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  static Request request(String id, long seed, String sampler, double guidance, OutputSpec out) {
    var params =
        new DiffusionParams(
            4, guidance, seed, 32, 32, 9, 8, "blurry", Optional.of(sampler), Optional.empty());
    return Request.builder(TaskType.T2V, params)
        .id(id)
        .prompt("a red ball bouncing")
        .output(out)
        .nodeOverrides(Map.of(WanCards.TEXT_ENCODE, Map.of("max_sequence_length", "16")))
        .build();
  }

  private static GenerationResult run(Engine engine, Request r) throws Exception {
    return engine.submit(r).result().get(120, TimeUnit.SECONDS);
  }

  private static BehaviorRecord behavior(GenerationResult r) {
    return r.artifact(Artifact.BehaviorArtifact.class).record();
  }

  private static float[] frames(GenerationResult r) {
    return r.artifact(Artifact.VideoArtifact.class).frames().toFloatArray();
  }

  @Test
  void capturingChangesNoOutputAndRecordsTheTrajectory() throws Exception {
    try (Engine engine = new Engine(model)) {
      for (String sampler : List.of("sde", "euler", "unipc")) {
        GenerationResult served =
            run(engine, request("serve-" + sampler, 7, sampler, 5.0, OutputSpec.WITH_LATENTS));
        GenerationResult rollout =
            run(
                engine,
                request(
                    "rollout-" + sampler,
                    7,
                    sampler,
                    5.0,
                    OutputSpec.WITH_LATENTS.capturing(BehaviorCapture.TRAJECTORY)));
        assertArrayEquals(frames(served), frames(rollout), 0f, sampler + ": frames");
        BehaviorRecord b = behavior(rollout);
        assertEquals(4, b.steps());
        assertEquals(5, b.latents().size(), "the latents before each step and the final ones");
        assertArrayEquals(
            TorchGenerator.seeded(7).randn(1, 16, 3, 4, 4).toFloatArray(),
            b.latentsBefore(0).toFloatArray(),
            0f,
            "the trajectory starts from the seed's noise");
        assertArrayEquals(
            rollout.artifact(Artifact.LatentArtifact.class).latents().toFloatArray(),
            b.finalLatents().toFloatArray(),
            0f,
            "the trajectory ends at the loop's latents");
        assertEquals(
            Optional.of(sampler),
            Optional.ofNullable(
                rollout
                    .artifact(Artifact.BehaviorArtifact.class)
                    .provenance()
                    .settings()
                    .get("sampler")));
        int textDim = model.transformerConfig().textDim();
        assertEquals(
            Map.of(
                "prompt_embeds",
                List.of(1, 16, textDim),
                "negative_prompt_embeds",
                List.of(1, 16, textDim)),
            shapes(b.conditioning()));
        if (sampler.equals("sde")) {
          assertEquals(4, b.logProbs().length, "one log-probability per stochastic step");
          for (double lp : b.logProbs()) {
            assertTrue(Double.isFinite(lp), "log-probability " + lp);
          }
        } else {
          assertEquals(0, b.logProbs().length, sampler + " is deterministic: nothing to match");
        }
        assertEquals("off", b.assumptions().get("step_cache"));
        assertEquals(model.weightsVersion(), b.weightsVersion());
        System.out.printf(
            "behaviour record, %s, trajectory of 4 steps at latents [16,3,4,4]: %d bytes%n",
            sampler, b.bytes());
      }
    }
  }

  @Test
  void aFinalCaptureKeepsOnlyTheEnd() throws Exception {
    try (Engine engine = new Engine(model)) {
      GenerationResult r =
          run(
              engine,
              request(
                  "final",
                  3,
                  "euler",
                  1.0,
                  OutputSpec.WITH_LATENTS.capturing(BehaviorCapture.FINAL)));
      BehaviorRecord b = behavior(r);
      assertEquals(1, b.latents().size());
      assertEquals(
          java.util.Set.of("prompt_embeds"), b.conditioning().keySet(), "no CFG, one branch");
      assertArrayEquals(
          r.artifact(Artifact.LatentArtifact.class).latents().toFloatArray(),
          b.finalLatents().toFloatArray(),
          0f);

      GenerationResult served =
          run(engine, request("final-serve", 3, "euler", 1.0, OutputSpec.DEFAULT));
      assertTrue(
          served.artifacts().stream().noneMatch(a -> a instanceof Artifact.BehaviorArtifact),
          "serving captures nothing");
    }
  }

  /** The interleave gate with capture on: concurrent rollouts record what they record alone. */
  @Test
  void interleavedRolloutsRecordWhatTheyRecordAlone() throws Exception {
    OutputSpec out = OutputSpec.DEFAULT.capturing(BehaviorCapture.TRAJECTORY);
    List<BehaviorRecord> alone = new ArrayList<>();
    try (Engine engine = new Engine(model)) {
      for (long seed = 1; seed <= 3; seed++) {
        alone.add(behavior(run(engine, request("alone-" + seed, seed, "sde", 5.0, out))));
      }
      List<CompletableFuture<GenerationResult>> together = new ArrayList<>();
      for (long seed = 1; seed <= 3; seed++) {
        together.add(engine.submit(request("together-" + seed, seed, "sde", 5.0, out)).result());
      }
      for (int i = 0; i < 3; i++) {
        BehaviorRecord b = behavior(together.get(i).get(120, TimeUnit.SECONDS));
        assertArrayEquals(alone.get(i).logProbs(), b.logProbs(), 0.0, "seed " + (i + 1));
        for (int k = 0; k < b.latents().size(); k++) {
          assertArrayEquals(
              alone.get(i).latents().get(k).toFloatArray(), b.latents().get(k).toFloatArray(), 0f);
        }
      }
      assertFalse(
          java.util.Arrays.equals(alone.get(0).logProbs(), alone.get(1).logProbs()),
          "other seeds, other noise");
    }
  }

  @Test
  void aResumedRolloutRecordsTheSameBehaviour(@TempDir Path dir) throws Exception {
    Request r =
        request(
            "resume-rollout",
            5,
            "sde",
            5.0,
            OutputSpec.DEFAULT.capturing(BehaviorCapture.TRAJECTORY));
    List<Path> checkpoints = new ArrayList<>();
    BehaviorRecord straight;
    try (Engine engine = new Engine(model)) {
      straight =
          behavior(
              engine
                  .submit(
                      r,
                      cp -> {
                        if (cp.current().loopId().equals(WanCards.DENOISE)) {
                          Path f = dir.resolve("cp" + checkpoints.size() + ".safetensors");
                          cp.write(f);
                          checkpoints.add(f);
                        }
                      })
                  .result()
                  .get(120, TimeUnit.SECONDS));
      ProgramCheckpoint mid = ProgramCheckpoint.read(checkpoints.get(1)); // after two steps
      BehaviorRecord resumed =
          behavior(engine.resume(r, mid, null).result().get(120, TimeUnit.SECONDS));
      assertArrayEquals(straight.logProbs(), resumed.logProbs(), 0.0);
      assertEquals(straight.latents().size(), resumed.latents().size());
      for (int k = 0; k < straight.latents().size(); k++) {
        assertArrayEquals(
            straight.latents().get(k).toFloatArray(), resumed.latents().get(k).toFloatArray(), 0f);
      }
    }
  }

  private static Map<String, List<Integer>> shapes(Map<String, Tensor> tensors) {
    Map<String, List<Integer>> out = new java.util.HashMap<>();
    tensors.forEach((k, v) -> out.put(k, java.util.Arrays.stream(v.shape()).boxed().toList()));
    return out;
  }
}
