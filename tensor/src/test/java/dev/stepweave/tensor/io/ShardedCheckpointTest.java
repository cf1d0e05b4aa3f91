package dev.stepweave.tensor.io;

import static dev.stepweave.tensor.io.RawSafetensors.assertOneLineNaming;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShardedCheckpointTest {
  private static final String INDEX = "model.safetensors.index.json";
  private static final String SHARD_1 = "model-00001-of-00002.safetensors";
  private static final String SHARD_2 = "model-00002-of-00002.safetensors";

  @TempDir Path dir;

  @BeforeEach
  void writeShards() {
    Safetensors.write(
        dir.resolve(SHARD_1),
        Map.of(
            "a.weight", Tensor.of(new float[] {1, 2}, 2), "a.bias", Tensor.of(new float[] {3}, 1)),
        Map.of("format", "pt"));
    Safetensors.write(
        dir.resolve(SHARD_2), Map.of("b.weight", Tensor.of(new float[] {4, 5, 6, 7}, 2, 2)), null);
  }

  private Path writeIndex(Map<String, String> weightMap) throws IOException {
    StringBuilder json = new StringBuilder("{\"metadata\":{\"total_size\":28},\"weight_map\":{");
    String sep = "";
    for (var e : new TreeMap<>(weightMap).entrySet()) {
      json.append(sep)
          .append('"')
          .append(e.getKey())
          .append("\":\"")
          .append(e.getValue())
          .append('"');
      sep = ",";
    }
    return Files.writeString(dir.resolve(INDEX), json.append("}}").toString());
  }

  private Path validIndex() throws IOException {
    return writeIndex(Map.of("a.weight", SHARD_1, "a.bias", SHARD_1, "b.weight", SHARD_2));
  }

  private CheckpointException openFails(Path index) {
    return assertThrows(CheckpointException.class, () -> ShardedCheckpoint.open(index).close());
  }

  @Test
  void loadsEachTensorFromItsShard() throws IOException {
    Path index = validIndex();
    try (ShardedCheckpoint c = ShardedCheckpoint.open(index)) {
      assertEquals(Set.of("a.weight", "a.bias", "b.weight"), c.keys());
      assertArrayEquals(new float[] {4, 5, 6, 7}, c.load("b.weight").toFloatArray());
      assertArrayEquals(new float[] {1, 2}, c.loadF32("a.weight").toFloatArray());
      assertArrayEquals(new int[] {2, 2}, c.info("b.weight").shape());
      assertEquals(SHARD_2, c.fileOf("b.weight").getFileName().toString());
      assertEquals(index, c.fileOf("absent"));
      assertEquals("28", c.metadata().get("total_size"));
    }
  }

  @Test
  void missingShardIsNamedWithTheIndexAndATensor() throws IOException {
    Files.delete(dir.resolve(SHARD_2));
    Path index = validIndex();
    assertOneLineNaming(
        openFails(index), index.toString(), SHARD_2, "'b.weight'", "does not exist");
  }

  @Test
  void tensorListedButAbsentFromItsShard() throws IOException {
    Path index =
        writeIndex(
            Map.of("a.weight", SHARD_1, "a.bias", SHARD_1, "b.weight", SHARD_2, "c", SHARD_2));
    assertOneLineNaming(openFails(index), index.toString(), SHARD_2, "'c'");
  }

  @Test
  void shardTensorMissingFromTheIndex() throws IOException {
    Path index = writeIndex(Map.of("a.weight", SHARD_1, "b.weight", SHARD_2));
    assertOneLineNaming(openFails(index), index.toString(), SHARD_1, "'a.bias'", "not mapped");
  }

  @Test
  void tensorMappedToTheWrongShard() throws IOException {
    Safetensors.write(
        dir.resolve(SHARD_2),
        Map.of("b.weight", Tensor.of(new float[] {4}, 1), "a.bias", Tensor.of(new float[] {9}, 1)),
        null);
    Path index = validIndex();
    assertOneLineNaming(openFails(index), index.toString(), SHARD_2, SHARD_1, "'a.bias'");
  }

  @Test
  void shardOutsideTheIndexFolderIsRejected() throws IOException {
    Path index = writeIndex(Map.of("a.weight", "../elsewhere.safetensors"));
    assertOneLineNaming(openFails(index), index.toString(), "'a.weight'", "beside the index");
  }

  @Test
  void indexWithoutWeightMapIsRejected() throws IOException {
    Path index = Files.writeString(dir.resolve(INDEX), "{\"metadata\":{}}");
    assertOneLineNaming(openFails(index), index.toString(), "weight_map");
  }

  @Test
  void indexThatIsNotJsonIsRejected() throws IOException {
    Path index = Files.writeString(dir.resolve(INDEX), "{\"weight_map\":\n{");
    assertOneLineNaming(openFails(index), index.toString(), "not valid JSON");
  }
}
