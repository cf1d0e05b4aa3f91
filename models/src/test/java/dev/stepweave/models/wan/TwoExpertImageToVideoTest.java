package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Image-to-video as Wan2.2-I2V-A14B ships it: two experts, no image encoder, the condition latents
 * alone. The checkpoint is the tiny Wan2.1 I2V one without its image encoder and its transformer's
 * image-token tensors, that transformer serving as both experts; requests batched give their serial
 * frames bit for bit, and the image embedding loop is not in the program.
 */
class TwoExpertImageToVideoTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The two-expert, encoder-less variant of the tiny I2V checkpoint, written under {@code dir}. */
  static Path checkpoint(Path dir) throws IOException {
    Path source = ImageToVideoTest.CHECKPOINT;
    try (Stream<Path> all = Files.walk(source)) {
      for (Path p : all.toList()) {
        String relative = source.relativize(p).toString();
        if (relative.startsWith(WanCards.IMAGE_ENCODER)
            || relative.startsWith(WanCards.IMAGE_PROCESSOR)
            || relative.startsWith("transformer")) {
          continue;
        }
        Path target = dir.resolve(relative);
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
    ObjectNode index = (ObjectNode) JSON.readTree(source.resolve("model_index.json").toFile());
    index.remove(WanCards.IMAGE_ENCODER);
    index.remove(WanCards.IMAGE_PROCESSOR);
    index.set(
        "transformer_2", JSON.createArrayNode().add("diffusers").add("WanTransformer3DModel"));
    index.put("boundary_ratio", 0.9);
    JSON.writeValue(dir.resolve("model_index.json").toFile(), index);
    ObjectNode config =
        (ObjectNode) JSON.readTree(source.resolve("transformer/config.json").toFile());
    config.remove("image_dim");
    config.remove("added_kv_proj_dim");
    Map<String, Tensor> weights = new LinkedHashMap<>();
    try (SafetensorsFile f =
        SafetensorsFile.open(source.resolve("transformer/diffusion_pytorch_model.safetensors"))) {
      for (String key : f.keys()) {
        if (!key.contains("add_k_proj")
            && !key.contains("add_v_proj")
            && !key.contains("norm_added_k")
            && !key.contains("image_embedder")) {
          weights.put(key, f.load(key));
        }
      }
      // Written while the source is open: its tensors are views of the mapped file.
      for (String expert : List.of("transformer", "transformer_2")) {
        Files.createDirectories(dir.resolve(expert));
        JSON.writeValue(dir.resolve(expert).resolve("config.json").toFile(), config);
        Safetensors.write(
            dir.resolve(expert).resolve("diffusion_pytorch_model.safetensors"), weights, Map.of());
      }
    }
    return dir;
  }

  @Test
  void batchedTwoExpertI2vRequestsGiveTheirSerialFramesAndRunNoImageEncoder(@TempDir Path dir)
      throws Exception {
    try (WanModel model = WanModel.load(checkpoint(dir), new CpuBackend())) {
      assertEquals(
          List.of(WanCards.TEXT_ENCODE, WanCards.VAE_ENCODE, WanCards.DENOISE, WanCards.VAE_DECODE),
          model.card().loopsFor(TaskType.I2V));
      assertFalse(model.weightComponents().contains(WanCards.IMAGE_ENCODER));
      List<Request> mix =
          List.of(
              ImageToVideoTest.request("a", ImageToVideoTest.image(61, 45, 1), 3, 32, 48, 4, 4.0),
              ImageToVideoTest.request("b", ImageToVideoTest.image(32, 32, 2), 8, 32, 32, 3, 5.0));
      // Both experts run (the switch itself is checked against the reference in TwoExpertTest).
      assertEquals(
          java.util.Set.of("transformer", "transformer_2"),
          java.util.Set.copyOf(model.expertsPerStep(mix.get(0))));
      ServedAlone.assertConcurrentRunGivesSerialFrames(() -> new Engine(model), mix);
    }
  }
}
