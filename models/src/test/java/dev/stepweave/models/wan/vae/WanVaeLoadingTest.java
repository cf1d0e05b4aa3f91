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

/** Config parsing and strict loading of the Wan 2.1 and Wan 2.2 (residual) VAEs. */
class WanVaeLoadingTest {
  private static final Path VAE_DIR =
      Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny/vae");
  private static final Path WAN22_DIR =
      Path.of(System.getProperty("stepweave.golden")).resolve("wan22-ti2v-tiny/vae");
  private static final Path WEIGHTS = VAE_DIR.resolve("diffusion_pytorch_model.safetensors");

  private static ObjectNode configJson() throws IOException {
    return configJson(VAE_DIR);
  }

  private static ObjectNode configJson(Path dir) throws IOException {
    return (ObjectNode) new ObjectMapper().readTree(dir.resolve("config.json").toFile());
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
  void readsEveryFieldOfTheResidualWan22Config() {
    WanVaeConfig config = WanVaeConfig.read(WAN22_DIR.resolve("config.json"));
    assertTrue(config.isResidual());
    assertEquals(8, config.baseDim());
    assertEquals(12, config.decoderDim());
    assertEquals(12, config.zDim());
    assertEquals(List.of(1, 2, 4, 4), config.dimMult());
    assertEquals(12, config.latentsMean().size());
    assertEquals(1.268584966659546, config.latentsStd().get(11), 1e-12);
    assertEquals(2, config.patch());
    assertEquals(12, config.inChannels());
    assertEquals(3, config.videoInChannels());
    assertEquals(3, config.videoOutChannels());
    assertEquals(16, config.spatialCompression());
    assertEquals(4, config.temporalCompression());
  }

  @Test
  void anUnknownFieldIsRefusedInOneLineNamingFileAndField(@TempDir Path dir) throws IOException {
    ObjectNode json = configJson(WAN22_DIR);
    json.put("clip_output", true);
    assertOneLineRefusal(dir, json, "'clip_output'");
  }

  @Test
  void malformedWan22FieldsAreRefusedInOneLineNamingTheField(@TempDir Path dir) throws IOException {
    ObjectNode notBoolean = configJson(WAN22_DIR);
    notBoolean.put("is_residual", "yes");
    assertOneLineRefusal(dir, notBoolean, "is_residual");
    ObjectNode oddPatch = configJson(WAN22_DIR);
    oddPatch.put("patch_size", 3);
    assertOneLineRefusal(dir, oddPatch, "patch_size");
    ObjectNode wrongScale = configJson(WAN22_DIR);
    wrongScale.put("scale_factor_spatial", 8);
    assertOneLineRefusal(dir, wrongScale, "scale_factor_spatial");
    ObjectNode shortStd = configJson(WAN22_DIR);
    shortStd.putArray("latents_std").add(1.0);
    assertOneLineRefusal(dir, shortStd, "latents_std");
    ObjectNode otherClass = configJson(WAN22_DIR);
    otherClass.put("_class_name", "AutoencoderKLQwenImage");
    assertOneLineRefusal(dir, otherClass, "_class_name");
  }

  @Test
  void residualStagesWhoseShortcutsCannotFitTheirWidthsAreRefused(@TempDir Path dir)
      throws IOException {
    // 8 → 24 channels: the encoder's first stage folds 8·4 = 32 values, not a multiple of 24.
    ObjectNode json = configJson(WAN22_DIR);
    json.putArray("dim_mult").add(3).add(2).add(4).add(4);
    assertOneLineRefusal(dir, json, "is_residual: encoder stage 0");
  }

  @Test
  void wan22WeightsReadAsTheWan21LayoutNameFileAndTensor() throws IOException {
    ObjectNode json = configJson(WAN22_DIR);
    json.put("is_residual", false);
    WanVaeConfig plain = WanVaeConfig.fromJson(json);
    Path weights = WAN22_DIR.resolve("diffusion_pytorch_model.safetensors");
    try (SafetensorsFile source = SafetensorsFile.open(weights)) {
      CheckpointException e =
          assertThrows(
              CheckpointException.class,
              () -> WanVae.load(plain, new Weights(source, new CpuBackend(1), DType.F32)));
      assertTrue(e.getMessage().contains(weights.getFileName().toString()), e.getMessage());
      assertTrue(e.getMessage().contains("encoder.down_blocks."), e.getMessage());
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
  }

  private static void assertOneLineRefusal(Path dir, ObjectNode json, String names)
      throws IOException {
    Path file = dir.resolve("config.json");
    Files.writeString(file, json.toString());
    CheckpointException e = assertThrows(CheckpointException.class, () -> WanVaeConfig.read(file));
    assertTrue(e.getMessage().startsWith(file + ": "), e.getMessage());
    assertTrue(e.getMessage().contains(names), e.getMessage());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
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
