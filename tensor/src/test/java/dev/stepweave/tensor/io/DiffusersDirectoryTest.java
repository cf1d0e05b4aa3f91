package dev.stepweave.tensor.io;

import static dev.stepweave.tensor.io.RawSafetensors.assertOneLineNaming;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.io.DiffusersDirectory.ComponentClass;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiffusersDirectoryTest {
  private static final Path WAN =
      Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny");

  @TempDir Path dir;

  @Test
  void listsTheGoldenPipelinesComponentsWithoutNullEntries() {
    DiffusersDirectory wan = DiffusersDirectory.open(WAN);
    assertEquals("WanPipeline", wan.pipelineClass());
    assertEquals(
        List.of("scheduler", "text_encoder", "tokenizer", "transformer", "vae"),
        List.copyOf(wan.components().keySet()));
    assertEquals(
        new ComponentClass("diffusers", "WanTransformer3DModel"),
        wan.components().get("transformer"));
    assertEquals(
        new ComponentClass("transformers", "UMT5EncoderModel"),
        wan.components().get("text_encoder"));
  }

  @Test
  void componentsCarryTheirConfigAndWeights() {
    DiffusersDirectory wan = DiffusersDirectory.open(WAN);
    DiffusersDirectory.Component transformer = wan.component("transformer");
    assertEquals(WAN.resolve("transformer"), transformer.dir());
    assertEquals("WanTransformer3DModel", transformer.config().get("_class_name").asText());
    assertTrue(transformer.config().get("num_layers").asInt() > 0);
    try (TensorSource weights = transformer.openWeights()) {
      assertTrue(weights.keys().contains("patch_embedding.weight"));
      assertEquals(
          transformer.config().get("in_channels").asInt(),
          weights.info("patch_embedding.weight").shape()[1]);
    }
    try (TensorSource weights = wan.component("text_encoder").openWeights()) {
      assertEquals(WAN.resolve("text_encoder/model.safetensors"), weights.fileOf("shared.weight"));
    }
  }

  @Test
  void schedulerAndTokenizerUseTheirOwnJsonFiles() {
    DiffusersDirectory wan = DiffusersDirectory.open(WAN);
    DiffusersDirectory.Component scheduler = wan.component("scheduler");
    assertEquals(WAN.resolve("scheduler/scheduler_config.json"), scheduler.configFile());
    assertEquals("UniPCMultistepScheduler", scheduler.config().get("_class_name").asText());
    DiffusersDirectory.Component tokenizer = wan.component("tokenizer");
    assertEquals(WAN.resolve("tokenizer/tokenizer.json"), tokenizer.configFile());
    assertTrue(tokenizer.config().has("model"));
  }

  @Test
  void unknownComponentNamesWhatIsPresent() {
    DiffusersDirectory wan = DiffusersDirectory.open(WAN);
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> wan.component("transformer_2"));
    assertOneLineNaming(e, "model_index.json", "'transformer_2'", "vae");
  }

  @Test
  void folderWithoutModelIndexIsNotAPipeline() {
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> DiffusersDirectory.open(dir));
    assertOneLineNaming(e, "no model_index.json in " + dir);
  }

  @Test
  void modelIndexThatIsNotJsonIsNamed() throws IOException {
    Path index = Files.writeString(dir.resolve("model_index.json"), "{\"vae\": [\"diffusers\",");
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> DiffusersDirectory.open(dir));
    assertOneLineNaming(e, index.toString(), "not valid JSON");
  }

  @Test
  void malformedComponentEntryIsNamed() throws IOException {
    Path index = Files.writeString(dir.resolve("model_index.json"), "{\"vae\": [\"diffusers\"]}");
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> DiffusersDirectory.open(dir));
    assertOneLineNaming(e, index.toString(), "'vae'", "[library, class]");
  }

  @Test
  void componentWithoutItsFolderIsNamed() throws IOException {
    Path index =
        Files.writeString(
            dir.resolve("model_index.json"), "{\"vae\": [\"diffusers\", \"AutoencoderKLWan\"]}");
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> DiffusersDirectory.open(dir));
    assertOneLineNaming(e, index.toString(), "'vae'", dir.resolve("vae").toString());
  }

  @Test
  void componentWithoutConfigIsNamed() throws IOException {
    Files.writeString(
        dir.resolve("model_index.json"), "{\"vae\": [\"diffusers\", \"AutoencoderKLWan\"]}");
    Files.createDirectory(dir.resolve("vae"));
    DiffusersDirectory pipeline = DiffusersDirectory.open(dir);
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> pipeline.component("vae"));
    assertOneLineNaming(e, dir.resolve("vae").toString(), "config.json");
  }

  @Test
  void componentWithInvalidConfigIsNamed() throws IOException {
    Files.writeString(
        dir.resolve("model_index.json"), "{\"vae\": [\"diffusers\", \"AutoencoderKLWan\"]}");
    Path config =
        Files.writeString(
            Files.createDirectory(dir.resolve("vae")).resolve("config.json"), "{\"z_dim\": 16,,}");
    DiffusersDirectory pipeline = DiffusersDirectory.open(dir);
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> pipeline.component("vae"));
    assertOneLineNaming(e, config.toString(), "not valid JSON");
  }
}
