package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.stepweave.core.cache.ContentHash;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Folders;
import dev.stepweave.tensor.io.Safetensors;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A diffusers checkpoint made from another with one component's config and weights replaced: every
 * other file hard-linked where the file system allows (a 1.3B text encoder is not copied), else
 * copied.
 */
public final class CheckpointCopy {
  static final String WEIGHTS_FILE = "diffusion_pytorch_model.safetensors";
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private CheckpointCopy() {}

  /**
   * Writes {@code to} (which must not exist): {@code from}'s files, but {@code component}'s folder
   * holds only {@code config} and {@code weights}, and without {@code from}'s card unless {@code
   * keepCard}.
   */
  public static void write(
      Path from,
      Path to,
      String component,
      JsonNode config,
      Map<String, Tensor> weights,
      boolean keepCard)
      throws IOException {
    Path partial = to.resolveSibling(to.getFileName() + ".partial");
    Folders.deleteTree(partial);
    Path skip = from.resolve(component);
    try (Stream<Path> all = Files.walk(from)) {
      for (Path p : all.toList()) {
        Path target = partial.resolve(from.relativize(p).toString());
        if (p.startsWith(skip) && !p.equals(skip)) {
          continue;
        }
        if (!keepCard && p.equals(from.resolve(CardJson.FILE_NAME))) {
          continue;
        }
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          link(p.toRealPath(), target);
        }
      }
    }
    Files.writeString(
        partial.resolve(component).resolve("config.json"),
        JSON.writeValueAsString(config) + "\n",
        StandardCharsets.UTF_8);
    Safetensors.write(
        partial.resolve(component).resolve(WEIGHTS_FILE), weights, Map.of("format", "pt"));
    Files.move(partial, to, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * The SHA-256 of a component's weights: its one safetensors file's, or for a sharded one the hash
   * of each file's name and hash in name order.
   */
  public static String weightsHash(Path componentDir) throws IOException {
    List<Path> files;
    try (Stream<Path> all = Files.list(componentDir)) {
      files = all.filter(p -> p.toString().endsWith(".safetensors")).sorted().toList();
    }
    if (files.size() == 1) {
      return ContentHash.ofFile(files.getFirst());
    }
    Map<String, String> hashes = new TreeMap<>();
    for (Path f : files) {
      hashes.put(f.getFileName().toString(), ContentHash.ofFile(f));
    }
    return ContentHash.ofBytes(hashes.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static void link(Path source, Path target) throws IOException {
    try {
      Files.createLink(target, source);
    } catch (IOException | UnsupportedOperationException e) {
      Files.copy(source, target);
    }
  }
}
