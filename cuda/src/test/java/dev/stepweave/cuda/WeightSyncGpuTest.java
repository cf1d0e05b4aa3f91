package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.TensorSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A trainer's weights published into a live engine on the GPU ({@code Engine.syncWeights}, as the
 * RL and distillation runs do on the CPU): the pool's transformer is rebuilt on the device from the
 * host tensors, the weights version moves on and is stamped on what is served after, and what is
 * served then is bit-identical to a fresh load of the same weights from an ordinary checkpoint on
 * the same device.
 */
@Tag("gpu")
class WeightSyncGpuTest {
  private static final Path TINY =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden")).resolve("wan21-tiny");

  private static Request request() {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(3, 5.0, 77, 32, 32, 5, 8, "", Optional.empty(), Optional.empty()))
        .prompt("a red ball bouncing")
        .build();
  }

  private static GenerationResult serve(Engine engine) throws Exception {
    return engine.submit(request()).result().get(120, TimeUnit.SECONDS);
  }

  private static float[] frames(GenerationResult r) {
    return r.artifact(Artifact.VideoArtifact.class).frames().toFloatArray();
  }

  private static String version(GenerationResult r) {
    return r.artifact(Artifact.VideoArtifact.class).provenance().settings().get("weights_version");
  }

  @Test
  void syncedWeightsServeAsAFreshLoadOfThemAndTheVersionMovesOn(@TempDir Path dir)
      throws Exception {
    // "Trained" weights: the tiny transformer's, every tensor scaled by 0.9, on the host.
    Map<String, Tensor> trained = new LinkedHashMap<>();
    try (TensorSource weights =
        DiffusersDirectory.open(TINY).component("transformer").openWeights()) {
      for (String key : weights.keys()) {
        float[] v = weights.loadF32(key).toFloatArray();
        for (int i = 0; i < v.length; i++) {
          v[i] *= 0.9f;
        }
        trained.put(key, Tensor.of(v, weights.loadF32(key).shape()));
      }
    }
    float[] before;
    float[] after;
    try (WanModel model = WanModel.load(TINY, Gpu.bf16());
        Engine engine = new Engine(model)) {
      GenerationResult first = serve(engine);
      before = frames(first);
      assertEquals("0", version(first));
      assertEquals(1L, engine.syncWeights("transformer", trained).get(120, TimeUnit.SECONDS));
      GenerationResult second = serve(engine);
      after = frames(second);
      assertEquals("1", version(second));
    }
    assertFalse(Arrays.equals(before, after), "the new weights change what is served");

    // An ordinary checkpoint of those weights: the tiny one copied, its transformer's replaced.
    Path copy = dir.resolve("trained");
    try (Stream<Path> files = Files.walk(TINY, java.nio.file.FileVisitOption.FOLLOW_LINKS)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.copy(f, copy.resolve(TINY.relativize(f).toString()));
      }
    }
    Safetensors.write(
        copy.resolve("transformer/diffusion_pytorch_model.safetensors"), trained, Map.of());
    try (WanModel fresh = WanModel.load(copy, Gpu.bf16());
        Engine engine = new Engine(fresh)) {
      assertArrayEquals(frames(serve(engine)), after, 0f);
    }
  }
}
