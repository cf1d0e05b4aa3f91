package dev.stepweave.tensor.io;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Whole folders on disk: checkpoints, runs, scratch space. */
public final class Folders {
  private Folders() {}

  /** Deletes {@code path} and everything under it, deepest first; nothing when it is absent. */
  public static void deleteTree(Path path) throws IOException {
    if (!Files.exists(path)) {
      return;
    }
    try (Stream<Path> all = Files.walk(path)) {
      for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
