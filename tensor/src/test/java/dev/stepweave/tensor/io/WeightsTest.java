package dev.stepweave.tensor.io;

import static dev.stepweave.tensor.io.RawSafetensors.assertOneLineNaming;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WeightsTest {
  @TempDir Path dir;
  private Path file;
  private SafetensorsFile source;
  private Weights weights;

  @BeforeEach
  void open() {
    Tensor bf16 = Tensor.zeros(DType.BF16, 2, 3);
    for (int i = 0; i < 6; i++) {
      bf16.setFloat(i * 0.5f - 1, i / 3, i % 3);
    }
    file = dir.resolve("block.safetensors");
    Safetensors.write(
        file,
        Map.of(
            "proj.weight", bf16,
            "proj.bias", Tensor.of(new float[] {0.25f, -4}, 2),
            "norm.weight", Tensor.of(new float[] {1, 1, 1}, 3)),
        null);
    source = SafetensorsFile.open(file);
    weights = new Weights(source, new CpuBackend(1), DType.F32);
  }

  @AfterEach
  void close() {
    source.close();
  }

  @Test
  void takesScopedTensorsUpcastToTheComputeType() {
    Weights proj = weights.scope("proj");
    Tensor w = proj.take("weight", 2, 3);
    assertEquals(DType.F32, w.dtype());
    assertArrayEquals(new float[] {-1, -0.5f, 0, 0.5f, 1, 1.5f}, w.toFloatArray());
    assertArrayEquals(new float[] {0.25f, -4}, proj.take("bias", 2).toFloatArray());
    weights.take("norm.weight", 3);
    assertDoesNotThrow(weights::finish);
  }

  @Test
  void loadedListsEveryTakenTensorByFullNameInLoadOrder() {
    Tensor bias = weights.scope("proj").take("bias", 2);
    Tensor norm = weights.take("norm.weight", 3);
    weights.skip("proj.weight", 2, 3);
    assertEquals(
        java.util.List.of("proj.bias", "norm.weight"),
        java.util.List.copyOf(weights.loaded().keySet()));
    assertSame(bias, weights.loaded().get("proj.bias"), "the very tensor the model holds");
    assertSame(norm, weights.scope("proj").loaded().get("norm.weight"), "scopes share the list");
  }

  @Test
  void stackedTensorsAreOneTensorWhoseSlicesAreTheParameters() {
    Path stackedFile = dir.resolve("qkv.safetensors");
    Safetensors.write(
        stackedFile,
        Map.of(
            "to_q.weight", Tensor.of(new float[] {1, 2, 3, 4}, 2, 2),
            "to_k.weight", Tensor.of(new float[] {5, 6, 7, 8}, 2, 2),
            "to_v.weight", Tensor.of(new float[] {9, 10, 11, 12, 13, 14}, 3, 2)),
        null);
    try (SafetensorsFile qkv = SafetensorsFile.open(stackedFile)) {
      Weights w = new Weights(qkv, new CpuBackend(1), DType.F32);
      Tensor stack = w.takeStacked(java.util.List.of("to_q.weight", "to_k.weight"), 2, 2);
      assertArrayEquals(new int[] {2, 2, 2}, stack.shape());
      assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, stack.toFloatArray());
      Tensor k = w.loaded().get("to_k.weight");
      assertArrayEquals(new float[] {5, 6, 7, 8}, k.toFloatArray());
      assertSame(stack.storage(), k.storage(), "each parameter is a view of the stack");
      // A trainer's in-place update of the parameter is an update of what the model multiplies by.
      k.setFloat(42f, 1, 0);
      assertEquals(42f, stack.getFloat(1, 1, 0));
      CheckpointException e =
          assertThrows(
              CheckpointException.class,
              () -> w.takeStacked(java.util.List.of("to_v.weight"), 2, 2));
      assertOneLineNaming(e, stackedFile.toString(), "'to_v.weight'", "[3, 2]", "[2, 2]");
    }
  }

  @Test
  void uploadedWeightsOutliveTheFile() {
    Tensor bias = weights.take("proj.bias", 2);
    source.close();
    assertArrayEquals(new float[] {0.25f, -4}, bias.toFloatArray());
  }

  @Test
  void missingTensorNamesFileTensorAndExpectedShape() {
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> weights.scope("proj").take("scale", 2));
    assertOneLineNaming(e, file.toString(), "missing tensor 'proj.scale'", "[2]");
  }

  @Test
  void shapeMismatchNamesBothShapes() {
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> weights.take("proj.weight", 3, 2));
    assertOneLineNaming(e, file.toString(), "'proj.weight'", "[2, 3]", "[3, 2]");
  }

  @Test
  void unclaimedTensorFailsFinish() {
    weights.take("proj.weight", 2, 3);
    weights.take("proj.bias", 2);
    CheckpointException e = assertThrows(CheckpointException.class, weights::finish);
    assertOneLineNaming(e, file.toString(), "unexpected tensor 'norm.weight'");
  }

  @Test
  void ignoredAndOptionalTensors() {
    assertNull(weights.takeOptional("proj.scale", 2));
    assertTrue(weights.has("proj.bias"));
    weights.ignore("norm.weight");
    weights.takeOptional("proj.bias", 2);
    weights.take("proj.weight", 2, 3);
    assertDoesNotThrow(weights::finish);
  }

  @Test
  void skippedTensorsAreCheckedAndClaimedWithoutLoading() {
    weights.skip("proj.weight", 2, 3);
    CheckpointException wrongShape =
        assertThrows(CheckpointException.class, () -> weights.skip("proj.bias", 3));
    assertOneLineNaming(wrongShape, file.toString(), "'proj.bias'", "[2]", "[3]");
    CheckpointException missing =
        assertThrows(CheckpointException.class, () -> weights.skip("proj.scale", 2));
    assertOneLineNaming(missing, file.toString(), "missing tensor 'proj.scale'");
    weights.take("proj.bias", 2);
    weights.skip("norm.weight", 3);
    assertDoesNotThrow(weights::finish);
  }

  @Test
  void missingTensorInAShardedCheckpointNamesTheIndex() throws IOException {
    Path shard = dir.resolve("model-00001-of-00001.safetensors");
    Safetensors.write(shard, Map.of("a", Tensor.of(new float[] {1}, 1)), null);
    Path index = dir.resolve("model.safetensors.index.json");
    Files.writeString(index, "{\"weight_map\":{\"a\":\"model-00001-of-00001.safetensors\"}}");
    try (ShardedCheckpoint sharded = ShardedCheckpoint.open(index)) {
      Weights w = new Weights(sharded, new CpuBackend(1), DType.F32);
      CheckpointException e = assertThrows(CheckpointException.class, () -> w.take("b", 1));
      assertOneLineNaming(e, index.toString(), "'b'");
    }
  }
}
