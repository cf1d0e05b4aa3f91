package dev.stepweave.tensor.io;

import static dev.stepweave.tensor.io.RawSafetensors.assertOneLineNaming;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointsTest {
  @TempDir Path dir;

  private static final Map<String, Tensor> ONE = Map.of("w", Tensor.of(new float[] {1, 2}, 2));

  @Test
  void opensASingleFileDirectly() {
    Path file = dir.resolve("anything.safetensors");
    Safetensors.write(file, ONE, null);
    try (TensorSource source = Checkpoints.open(file)) {
      assertInstanceOf(SafetensorsFile.class, source);
      assertEquals(Set.of("w"), source.keys());
    }
  }

  @Test
  void findsTheDiffusersWeightFileInAFolder() {
    Safetensors.write(dir.resolve("diffusion_pytorch_model.safetensors"), ONE, null);
    try (TensorSource source = Checkpoints.open(dir)) {
      assertEquals(Set.of("w"), source.keys());
    }
  }

  @Test
  void findsAShardedTransformersCheckpointInAFolder() throws IOException {
    Safetensors.write(dir.resolve("model-00001-of-00001.safetensors"), ONE, null);
    Files.writeString(
        dir.resolve("model.safetensors.index.json"),
        "{\"weight_map\":{\"w\":\"model-00001-of-00001.safetensors\"}}");
    try (TensorSource source = Checkpoints.open(dir)) {
      assertInstanceOf(ShardedCheckpoint.class, source);
      assertEquals(Set.of("w"), source.keys());
    }
  }

  @Test
  void folderWithoutWeightsListsTheNamesLookedFor() {
    CheckpointException e = assertThrows(CheckpointException.class, () -> Checkpoints.open(dir));
    assertOneLineNaming(
        e,
        dir.toString(),
        "diffusion_pytorch_model.safetensors",
        "model.safetensors",
        "diffusion_pytorch_model.safetensors.index.json",
        "model.safetensors.index.json");
  }

  @Test
  void folderWithTwoWeightFilesIsAmbiguous() {
    Safetensors.write(dir.resolve("diffusion_pytorch_model.safetensors"), ONE, null);
    Safetensors.write(dir.resolve("model.safetensors"), ONE, null);
    CheckpointException e = assertThrows(CheckpointException.class, () -> Checkpoints.open(dir));
    assertOneLineNaming(e, dir.toString(), "ambiguous", "model.safetensors");
  }

  @Test
  void otherFilesAndMissingPathsAreRejected() throws IOException {
    Path text = Files.writeString(dir.resolve("weights.bin"), "x");
    assertOneLineNaming(
        assertThrows(CheckpointException.class, () -> Checkpoints.open(text)), text.toString());
    Path absent = dir.resolve("absent.safetensors");
    assertOneLineNaming(
        assertThrows(CheckpointException.class, () -> Checkpoints.open(absent)),
        absent.toString(),
        "no such file");
  }
}
