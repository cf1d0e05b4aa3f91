package dev.stepweave.tensor.io;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A checkpoint split over several safetensors shards by a {@code *.safetensors.index.json} whose
 * {@code weight_map} names each tensor's shard. Opening validates that every shard exists and that
 * index and shards agree tensor by tensor, so a partial download fails before any weight loads.
 */
public final class ShardedCheckpoint implements TensorSource {
  private final Path index;
  private final List<SafetensorsFile> shards;
  private final SortedMap<String, SafetensorsFile> shardOf;
  private final Map<String, String> metadata;

  private ShardedCheckpoint(
      Path index,
      List<SafetensorsFile> shards,
      SortedMap<String, SafetensorsFile> shardOf,
      Map<String, String> metadata) {
    this.index = index;
    this.shards = List.copyOf(shards);
    this.shardOf = Collections.unmodifiableSortedMap(shardOf);
    this.metadata = Collections.unmodifiableMap(metadata);
  }

  /**
   * Opens the index and all of its shards.
   *
   * @throws CheckpointException naming the index, the shard and the tensor that disagree
   */
  public static ShardedCheckpoint open(Path indexFile) {
    JsonNode root = JsonFiles.readObject(indexFile);
    Map<String, Path> shardPathOf = weightMap(indexFile, root);
    Map<Path, SafetensorsFile> opened = new LinkedHashMap<>();
    try {
      SortedMap<String, SafetensorsFile> shardOf = new TreeMap<>();
      for (Map.Entry<String, Path> e : shardPathOf.entrySet()) {
        Path shardPath = e.getValue();
        if (!opened.containsKey(shardPath)) {
          if (!Files.isRegularFile(shardPath)) {
            throw new CheckpointException(
                indexFile
                    + ": shard "
                    + shardPath
                    + " (listed for tensor '"
                    + e.getKey()
                    + "') does not exist");
          }
          opened.put(shardPath, SafetensorsFile.open(shardPath));
        }
        SafetensorsFile shard = opened.get(shardPath);
        if (!shard.keys().contains(e.getKey())) {
          throw new CheckpointException(
              indexFile
                  + ": tensor '"
                  + e.getKey()
                  + "' is listed in shard "
                  + shardPath
                  + ", which does not hold it");
        }
        shardOf.put(e.getKey(), shard);
      }
      for (SafetensorsFile shard : opened.values()) {
        for (String key : shard.keys()) {
          if (shardOf.get(key) != shard) {
            throw new CheckpointException(
                shard.file()
                    + ": tensor '"
                    + key
                    + "' is not mapped to this shard by "
                    + indexFile
                    + (shardOf.containsKey(key)
                        ? " (it names " + shardOf.get(key).file() + ")"
                        : ""));
          }
        }
      }
      return new ShardedCheckpoint(
          indexFile, new ArrayList<>(opened.values()), shardOf, metadataOf(root));
    } catch (RuntimeException e) {
      opened.values().forEach(SafetensorsFile::close);
      throw e;
    }
  }

  /** Tensor name -> shard path, in name order; shards must be plain files beside the index. */
  private static Map<String, Path> weightMap(Path indexFile, JsonNode root) {
    JsonNode map = root.get("weight_map");
    if (map == null || !map.isObject()) {
      throw new CheckpointException(indexFile + ": no 'weight_map' object");
    }
    Path dir = indexFile.toAbsolutePath().normalize().getParent();
    Map<String, Path> out = new TreeMap<>();
    for (Map.Entry<String, JsonNode> e : map.properties()) {
      JsonNode shard = e.getValue();
      if (!shard.isTextual()) {
        throw new CheckpointException(
            indexFile + ": weight_map entry of tensor '" + e.getKey() + "' is not a file name");
      }
      Path shardPath = dir.resolve(shard.textValue()).normalize();
      if (!dir.equals(shardPath.getParent())) {
        throw new CheckpointException(
            indexFile
                + ": shard '"
                + shard.textValue()
                + "' of tensor '"
                + e.getKey()
                + "' is not a file beside the index");
      }
      out.put(e.getKey(), shardPath);
    }
    return out;
  }

  /** The index's {@code metadata} (e.g. total_size) as strings. */
  private static Map<String, String> metadataOf(JsonNode root) {
    Map<String, String> out = new TreeMap<>();
    JsonNode meta = root.get("metadata");
    if (meta != null && meta.isObject()) {
      for (Map.Entry<String, JsonNode> e : meta.properties()) {
        out.put(
            e.getKey(),
            e.getValue().isValueNode() ? e.getValue().asText() : e.getValue().toString());
      }
    }
    return out;
  }

  public Path index() {
    return index;
  }

  @Override
  public Set<String> keys() {
    return shardOf.keySet();
  }

  @Override
  public TensorInfo info(String key) {
    return shard(key).info(key);
  }

  @Override
  public Tensor load(String key) {
    return shard(key).load(key);
  }

  @Override
  public Path fileOf(String key) {
    SafetensorsFile shard = shardOf.get(key);
    return shard == null ? index : shard.file();
  }

  @Override
  public Map<String, String> metadata() {
    return metadata;
  }

  /** Unmaps every shard. */
  @Override
  public void close() {
    shards.forEach(SafetensorsFile::close);
  }

  private SafetensorsFile shard(String key) {
    SafetensorsFile shard = shardOf.get(key);
    if (shard == null) {
      throw new CheckpointException(index + ": no tensor '" + key + "'");
    }
    return shard;
  }

  @Override
  public String toString() {
    return "ShardedCheckpoint(" + index + ", " + shards.size() + " shards)";
  }
}
