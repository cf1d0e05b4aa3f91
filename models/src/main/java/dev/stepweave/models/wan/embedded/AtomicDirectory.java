package dev.stepweave.models.wan.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Consumer;

/**
 * A directory that is either absent or complete. It is filled under a unique temporary name beside
 * its final one, a completion marker is written last, and the whole is renamed into place in one
 * atomic step; so concurrent creators (threads or processes) each build their own copy, the first
 * rename wins and the others discard theirs, and a crash leaves at most a temporary directory that
 * is never read (and is swept up later).
 */
final class AtomicDirectory {
  /** The file whose presence means "every other file here is complete". */
  static final String COMPLETE_MARKER = ".complete";

  private static final String PARTIAL = ".partial-";
  private static final String STALE = ".stale-";
  // Long past any real build time, so a sweep never deletes a copy still being written.
  private static final Duration ABANDONED_AFTER = Duration.ofHours(1);

  private AtomicDirectory() {}

  /**
   * Returns {@code target}, first creating it with {@code populate} (which fills the empty
   * directory it is given) unless a complete copy is already there.
   *
   * @param marker what the completion marker says (e.g. the format version), for people reading
   */
  static Path ensure(Path target, Consumer<Path> populate, String marker) {
    if (isComplete(target)) {
      return target;
    }
    Path parent = target.toAbsolutePath().getParent();
    String name = target.getFileName().toString();
    Path partial = null;
    try {
      Files.createDirectories(parent);
      sweepAbandoned(parent, "." + name);
      partial = Files.createTempDirectory(parent, "." + name + PARTIAL);
      populate.accept(partial);
      Files.writeString(partial.resolve(COMPLETE_MARKER), marker + "\n");
      install(partial, target);
      return target;
    } catch (IOException e) {
      throw new UncheckedIOException(target + ": cannot create (" + e.getMessage() + ")", e);
    } finally {
      if (partial != null) {
        deleteTree(partial);
      }
    }
  }

  static boolean isComplete(Path dir) {
    return Files.isRegularFile(dir.resolve(COMPLETE_MARKER));
  }

  private static void install(Path partial, Path target) throws IOException {
    try {
      Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
      return;
    } catch (IOException raced) {
      if (isComplete(target)) {
        return; // another creator finished first; its copy is identical
      }
      if (!Files.exists(target)) {
        throw raced;
      }
    }
    // An incomplete directory holds the final name (not one of ours: we only rename complete
    // copies). Move it out of the way atomically, then install ours.
    Path stale =
        Files.createTempDirectory(
            target.toAbsolutePath().getParent(), "." + target.getFileName() + STALE);
    Files.move(target, stale.resolve("old"), StandardCopyOption.ATOMIC_MOVE);
    deleteTree(stale);
    try {
      Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException raced) {
      if (!isComplete(target)) {
        throw raced;
      }
    }
  }

  /** Deletes leftovers of creators that died mid-way: old partial and stale siblings. */
  private static void sweepAbandoned(Path parent, String prefix) throws IOException {
    FileTime cutoff = FileTime.from(Instant.now().minus(ABANDONED_AFTER));
    try (DirectoryStream<Path> siblings = Files.newDirectoryStream(parent, prefix + "*")) {
      for (Path p : siblings) {
        String n = p.getFileName().toString();
        boolean leftover = n.startsWith(prefix + PARTIAL) || n.startsWith(prefix + STALE);
        if (leftover && lastModified(p).compareTo(cutoff) < 0) {
          deleteTree(p);
        }
      }
    }
  }

  private static FileTime lastModified(Path p) throws IOException {
    try {
      return Files.getLastModifiedTime(p);
    } catch (NoSuchFileException gone) {
      return FileTime.from(Instant.MAX);
    }
  }

  /** Best-effort recursive delete; a file another sweeper removed first is not an error. */
  private static void deleteTree(Path root) {
    try {
      Files.walkFileTree(
          root,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                throws IOException {
              Files.deleteIfExists(file);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
              Files.deleteIfExists(dir);
              return FileVisitResult.CONTINUE;
            }
          });
    } catch (NoSuchFileException gone) {
      // nothing left to delete
    } catch (IOException e) {
      // A leftover costs disk space only; it is never read, and a later sweep retries.
    }
  }
}
