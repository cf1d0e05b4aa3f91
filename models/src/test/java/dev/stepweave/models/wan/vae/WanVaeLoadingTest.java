package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Config parsing and strict loading of the Wan 2.1 VAE. */
class WanVaeLoadingTest {
  private static final Path VAE_DIR =
      Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny/vae");
  private static final Path WEIGHTS = VAE_DIR.resolve("diffusion_pytorch_model.safetensors");

  private static ObjectNode configJson() throws IOException {
    return (ObjectNode) new ObjectMapper().readTree(VAE_DIR.resolve("config.json").toFile());
  }

  @Test
  void readsEveryFieldOfTheCheckpointConfig() {
    WanVaeConfig config = WanVaeConfig.read(VAE_DIR.resolve("config.json"));
    assertEquals(8, config.baseDim());
    assertNull(config.decoderBaseDim());
    assertEquals(8, config.decoderDim());
    assertEquals(16, config.zDim());
    assertEquals(List.of(1, 2, 4, 4), config.dimMult());
    assertEquals(1, config.numResBlocks());
    assertEquals(List.of(false, true, true), config.temperalDownsample());
    assertEquals(List.of(true, true, false), config.temporalUpsample());
    assertEquals(16, config.latentsMean().size());
    assertEquals(1.916, config.latentsStd().get(15), 1e-12);
    assertFalse(config.isResidual());
    assertNull(config.patchSize());
    assertEquals(8, config.spatialCompression());
    assertEquals(4, config.temporalCompression());
  }

  @Test
  void rejectsTheResidualWan22VaeInOneLine(@TempDir Path dir) throws IOException {
    ObjectNode json = configJson();
    json.put("is_residual", true);
    Path file = dir.resolve("config.json");
    Files.writeString(file, json.toString());
    CheckpointException e = assertThrows(CheckpointException.class, () -> WanVaeConfig.read(file));
    assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("is_residual"), e.getMessage());
    assertFalse(e.getMessage().contains("\n"));
  }

  @Test
  void configWhoseWidthDisagreesWithTheWeightsNamesFileAndTensor() throws IOException {
    ObjectNode json = configJson();
    json.put("base_dim", 16);
    WanVaeConfig wrong = WanVaeConfig.fromJson(json);
    try (SafetensorsFile source = SafetensorsFile.open(WEIGHTS)) {
      CheckpointException e =
          assertThrows(
              CheckpointException.class,
              () -> WanVae.load(wrong, new Weights(source, new CpuBackend(1), DType.F32)));
      String message = e.getMessage();
      assertTrue(message.contains(WEIGHTS.getFileName().toString()), message);
      assertTrue(message.contains("encoder.conv_in.weight"), message);
      assertFalse(message.contains("\n"), message);
    }
  }

  @Test
  void rejectsConfigsThatContradictThemselves() throws IOException {
    ObjectNode json = configJson();
    json.put("num_res_blocks", 0);
    assertThrows(IllegalArgumentException.class, () -> WanVaeConfig.fromJson(json));
    ObjectNode narrower = configJson();
    narrower.putArray("latents_mean").add(0.0);
    assertThrows(IllegalArgumentException.class, () -> WanVaeConfig.fromJson(narrower));
  }
}
