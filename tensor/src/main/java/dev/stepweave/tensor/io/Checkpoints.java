package dev.stepweave.tensor.io;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Opens whatever form a component's weights come in: one file, a sharded index, or a folder. */
public final class Checkpoints {
  private static final String INDEX_SUFFIX = ".safetensors.index.json";

  /** The names diffusers and transformers save weights under, single-file and sharded. */
  private static final List<String> WEIGHT_FILE_NAMES =
      List.of(
          "diffusion_pytorch_model.safetensors",
          "diffusion_pytorch_model" + INDEX_SUFFIX,
          "model.safetensors",
          "model" + INDEX_SUFFIX);

  private Checkpoints() {}

  /**
   * Opens {@code path}: a {@code .safetensors} file, a {@code .safetensors.index.json}, or a
   * directory holding exactly one of the standard weight files.
   *
   * @throws CheckpointException naming the path and, for a directory, the names looked for
   */
  public static TensorSource open(Path path) {
    if (Files.isDirectory(path)) {
      return openFile(weightFileIn(path));
    }
    if (!Files.exists(path)) {
      throw new CheckpointException(path + ": no such file or directory");
    }
    return openFile(path);
  }

  private static Path weightFileIn(Path dir) {
    List<Path> found =
        WEIGHT_FILE_NAMES.stream().map(dir::resolve).filter(Files::isRegularFile).toList();
    if (found.isEmpty()) {
      throw new CheckpointException(
          dir + ": no weights found (looked for " + String.join(", ", WEIGHT_FILE_NAMES) + ")");
    }
    if (found.size() > 1) {
      throw new CheckpointException(
          dir
              + ": ambiguous weights, found "
              + String.join(", ", found.stream().map(p -> p.getFileName().toString()).toList()));
    }
    return found.getFirst();
  }

  private static TensorSource openFile(Path file) {
    String name = file.getFileName().toString();
    if (name.endsWith(INDEX_SUFFIX)) {
      return ShardedCheckpoint.open(file);
    }
    if (name.endsWith(".safetensors")) {
      return SafetensorsFile.open(file);
    }
    throw new CheckpointException(
        file + ": not a .safetensors file or a " + INDEX_SUFFIX + " index");
  }
}
