package dev.stepweave.training.rl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.LearningRate;
import dev.stepweave.training.parity.TrainingParity;
import dev.stepweave.training.wan.FlowMatchingTrainer;
import dev.stepweave.training.wan.TrainableTransformer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Weight sync into a live engine (design §10): a trainer in the same process fine-tunes the DiT and
 * publishes its weights three times while a client keeps requests flowing. Every served artifact
 * names one weights version, versions only move forward, serving never stopped, and what the engine
 * serves after the last sync is bit-identical to a fresh load of the trained weights.
 */
class WeightSyncWhileServingTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  private static final Path TINY = GOLDEN.resolve("wan21-lora-tiny");
  private static final int SYNCS = 3;

  private static Request request(String id, long seed) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(3, 5.0, seed, 32, 32, 5, 8, "", Optional.empty(), Optional.empty()))
        .id(id)
        .prompt("a red ball bouncing")
        .output(OutputSpec.WITH_LATENTS)
        .nodeOverrides(Map.of("text_encode", Map.of("max_sequence_length", "16")))
        .build();
  }

  private static FlowMatching.Batch batch() {
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      return TrainingParity.batch(rec);
    }
  }

  /** The one weights version an artifact list names. */
  private static long version(GenerationResult r) {
    Set<String> versions = new HashSet<>();
    for (Artifact a : r.artifacts()) {
      versions.add(a.provenance().settings().get("weights_version"));
    }
    assertEquals(1, versions.size(), "one version per request: " + versions);
    return Long.parseLong(versions.iterator().next());
  }

  @Test
  void servingContinuesWhileTrainingSyncsAndEveryArtifactNamesOneVersion(@TempDir Path dir)
      throws Exception {
    DiffusersDirectory.Component component = DiffusersDirectory.open(TINY).component("transformer");
    WanTransformerConfig cfg = WanTransformerConfig.fromJson(component.config());
    Map<String, Tensor> trained;
    List<Long> servedVersions = new ArrayList<>();
    float[] servedAfter;
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model);
        TensorSource weights = component.openWeights()) {
      TrainableTransformer policy = TrainableTransformer.load(cfg, weights, new CpuBackend());
      FlowMatchingTrainer trainer =
          new FlowMatchingTrainer(
              policy,
              policy.parameters(),
              n -> AdapterRows.NONE,
              new dev.stepweave.training.optim.Optimiser.Settings(
                  new LearningRate.Constant(1e-3),
                  AdamW.Settings.torchDefaults(),
                  1.0,
                  Double.NaN));

      AtomicBoolean training = new AtomicBoolean(true);
      CompletableFuture<List<GenerationResult>> client =
          CompletableFuture.supplyAsync(
              () -> {
                List<GenerationResult> done = new ArrayList<>();
                for (int i = 0; training.get() || i < 2; i++) {
                  try {
                    done.add(
                        engine
                            .submit(request("serve-" + i, i))
                            .result()
                            .get(120, TimeUnit.SECONDS));
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                }
                return done;
              });
      FlowMatching.Batch batch = batch();
      for (int k = 1; k <= SYNCS; k++) {
        trainer.step(List.of(batch));
        trainer.step(List.of(batch));
        assertEquals(
            k, engine.syncWeights("transformer", policy.parameters()).get(120, TimeUnit.SECONDS));
      }
      trained = new HashMap<>();
      policy.parameters().forEach((name, t) -> trained.put(name, t.toHost(DType.F32)));
      training.set(false);
      for (GenerationResult r : client.get(300, TimeUnit.SECONDS)) {
        servedVersions.add(version(r));
      }
      GenerationResult after =
          engine.submit(request("after", 99)).result().get(120, TimeUnit.SECONDS);
      assertEquals(SYNCS, version(after));
      servedAfter = after.artifact(Artifact.VideoArtifact.class).frames().toFloatArray();

      // A sync the model cannot take fails alone, and the weights stay as they were.
      Map<String, Tensor> missing = new HashMap<>(trained);
      missing.remove("proj_out.weight");
      var refused =
          assertThrows(
              ExecutionException.class,
              () -> engine.syncWeights("transformer", missing).get(60, TimeUnit.SECONDS));
      assertTrue(
          refused.getCause().getMessage().contains("proj_out.weight"),
          refused.getCause().getMessage());
      var vae =
          assertThrows(
              ExecutionException.class,
              () -> engine.syncWeights("vae", trained).get(60, TimeUnit.SECONDS));
      assertEquals(
          "model 'wan21-lora-tiny' swaps transformer weights only, not 'vae'",
          vae.getCause().getMessage());
      assertEquals(SYNCS, model.weightsVersion());
    }
    System.out.println("weights versions of the requests served while training: " + servedVersions);
    assertTrue(
        new HashSet<>(servedVersions).size() >= 2,
        "requests were served under more than one version: " + servedVersions);
    for (int i = 1; i < servedVersions.size(); i++) {
      assertTrue(
          servedVersions.get(i) >= servedVersions.get(i - 1),
          "versions only move forward: " + servedVersions);
    }

    // The trained weights written as an ordinary checkpoint and loaded fresh serve the same bits.
    Path copy = dir.resolve("trained");
    try (Stream<Path> files = Files.walk(TINY, java.nio.file.FileVisitOption.FOLLOW_LINKS)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Path to = copy.resolve(TINY.relativize(f).toString());
        if (Files.isDirectory(f)) {
          Files.createDirectories(to);
        } else if (!f.getFileName().toString().endsWith(".safetensors")
            || !f.getParent().getFileName().toString().equals("transformer")) {
          Files.copy(f, to);
        }
      }
    }
    Safetensors.write(
        copy.resolve("transformer/diffusion_pytorch_model.safetensors"), trained, Map.of());
    try (WanModel fresh = WanModel.load(copy, new CpuBackend());
        Engine engine = new Engine(fresh)) {
      float[] expected =
          engine
              .submit(request("after", 99))
              .result()
              .get(120, TimeUnit.SECONDS)
              .artifact(Artifact.VideoArtifact.class)
              .frames()
              .toFloatArray();
      assertArrayEquals(expected, servedAfter, 0f);
    }
  }
}
