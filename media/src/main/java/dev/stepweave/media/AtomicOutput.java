package dev.stepweave.media;

import dev.stepweave.tensor.io.Folders;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.UUID;

/**
 * Writes outputs so that readers only ever see a complete file or directory: the content goes to a
 * hidden temporary sibling (same directory, so the final rename stays on one file system) and is
 * renamed into place only after the producer returned normally. On failure the temporary is
 * removed. Public for products that write folders of their own (a dataset folder, latent shards).
 */
public final class AtomicOutput {
  /** Produces the content at a temporary path. */
  @FunctionalInterface
  public interface Producer {
    void writeTo(Path temporary) throws IOException;
  }

  private AtomicOutput() {}

  /**
   * Fails with a one-line message naming {@code target} unless a file can be created or replaced
   * there: its directory exists and is writable, and the target is not itself a directory.
   */
  static void checkFileWritable(Path target, String what) throws IOException {
    Path dir = parentOf(target);
    checkDirectoryUsable(dir, target, what);
    if (Files.isDirectory(target)) {
      throw new IOException("cannot write " + what + " to " + target + ": it is a directory");
    }
    if (Files.exists(target) && !Files.isWritable(target)) {
      throw new IOException(
          "cannot write " + what + " to " + target + ": the existing file is not writable");
    }
  }

  /**
   * Fails with a one-line message naming {@code target} unless a directory can be created there:
   * its parent exists and is writable, and the target is absent or an empty directory (existing
   * content is never merged into or deleted).
   */
  public static void checkDirectoryWritable(Path target, String what) throws IOException {
    checkDirectoryUsable(parentOf(target), target, what);
    if (Files.exists(target)) {
      if (!Files.isDirectory(target)) {
        throw new IOException(
            "cannot write " + what + " to " + target + ": it exists and is not a directory");
      }
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(target)) {
        if (entries.iterator().hasNext()) {
          throw new IOException(
              "cannot write " + what + " to " + target + ": the directory is not empty");
        }
      }
    }
  }

  /** Writes a file via a temporary sibling; replaces an existing file only on success. */
  static void writeFile(Path target, Producer producer) throws IOException {
    write(Files.createFile(temporarySibling(target)), target, producer);
  }

  /** Fills a temporary sibling directory, then renames it to {@code target} (absent or empty). */
  public static void writeDirectory(Path target, Producer producer) throws IOException {
    write(Files.createDirectory(temporarySibling(target)), target, producer);
  }

  private static void write(Path temporary, Path target, Producer producer) throws IOException {
    try {
      producer.writeTo(temporary);
      moveIntoPlace(temporary, target);
    } catch (Throwable e) {
      discard(temporary, e);
      throw e;
    }
  }

  private static void checkDirectoryUsable(Path dir, Path target, String what) throws IOException {
    if (!Files.isDirectory(dir)) {
      throw new IOException(
          "cannot write " + what + " to " + target + ": directory " + dir + " does not exist");
    }
    if (!Files.isWritable(dir)) {
      throw new IOException(
          "cannot write " + what + " to " + target + ": directory " + dir + " is not writable");
    }
  }

  private static void moveIntoPlace(Path temporary, Path target) throws IOException {
    try {
      Files.move(
          temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING);
    }
  }

  private static Path parentOf(Path target) {
    Path parent = target.toAbsolutePath().getParent();
    if (parent == null) {
      throw new IllegalArgumentException("output path " + target + " has no parent directory");
    }
    return parent;
  }

  /**
   * A unique hidden name next to {@code target}. Not Files.createTemp*: those restrict permissions
   * to the owner, which the renamed result would keep; plain creation honours the umask.
   */
  private static Path temporarySibling(Path target) {
    return parentOf(target).resolve("." + target.getFileName() + "." + UUID.randomUUID() + ".part");
  }

  private static void discard(Path temporary, Throwable cause) {
    try {
      Folders.deleteTree(temporary);
    } catch (IOException e) {
      cause.addSuppressed(e);
    }
  }
}
