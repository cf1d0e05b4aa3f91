package dev.stepweave.training.data;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@value #FILE} of a shards folder: what was encoded, by what, and where each sample is.
 *
 * @param modelId the card id of the model whose text encoder and VAE encoded the data
 * @param weightsVersion that model instance's weights version
 * @param datasetSha256 the dataset folder's content hash ({@link DatasetFolder#contentHash})
 * @param maxSequenceLength the text length every embedding is padded to
 * @param shards the shard files in sample order
 */
public record ShardIndex(
    String modelId,
    long weightsVersion,
    String datasetSha256,
    int maxSequenceLength,
    List<Shard> shards) {
  public static final String FILE = "index.json";
  public static final String FORMAT = "stepweave-latent-shards";
  public static final int VERSION = 1;

  private static final ObjectMapper JSON = new ObjectMapper();

  /** One shard file and how many samples it holds. */
  public record Shard(String file, int samples) {}

  public ShardIndex {
    shards = List.copyOf(shards);
  }

  /** Samples over all shards. */
  public int samples() {
    return shards.stream().mapToInt(Shard::samples).sum();
  }

  void write(Path dir) throws IOException {
    ObjectNode root = JSON.createObjectNode();
    root.put("format", FORMAT);
    root.put("version", VERSION);
    root.put("model_id", modelId);
    root.put("weights_version", weightsVersion);
    root.put("dataset_sha256", datasetSha256);
    root.put("max_sequence_length", maxSequenceLength);
    root.put("samples", samples());
    var list = root.putArray("shards");
    for (Shard s : shards) {
      list.addObject().put("file", s.file()).put("samples", s.samples());
    }
    Files.writeString(
        dir.resolve(FILE), JSON.writerWithDefaultPrettyPrinter().writeValueAsString(root) + "\n");
  }

  static ShardIndex read(Path dir) {
    Path file = dir.resolve(FILE);
    JsonNode root;
    try {
      root = JSON.readTree(file.toFile());
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "shards folder "
              + dir
              + ": cannot read "
              + FILE
              + " ("
              + e.getMessage().lines().findFirst().orElse("")
              + ")");
    }
    if (!FORMAT.equals(root.path("format").asText()) || root.path("version").asInt() != VERSION) {
      throw new IllegalArgumentException(
          file + ": not a " + FORMAT + " version " + VERSION + " index");
    }
    List<Shard> shards = new ArrayList<>();
    for (JsonNode s : root.path("shards")) {
      String name = s.path("file").asText();
      if (name.isEmpty() || name.contains("/") || name.contains("\\")) {
        throw new IllegalArgumentException(file + ": bad shard file name '" + name + "'");
      }
      shards.add(new Shard(name, s.path("samples").asInt()));
    }
    ShardIndex index =
        new ShardIndex(
            root.path("model_id").asText(),
            root.path("weights_version").asLong(),
            root.path("dataset_sha256").asText(),
            root.path("max_sequence_length").asInt(),
            shards);
    if (index.samples() != root.path("samples").asInt()) {
      throw new IllegalArgumentException(
          file
              + ": 'samples' is "
              + root.path("samples").asInt()
              + " but the shards hold "
              + index.samples());
    }
    return index;
  }
}
