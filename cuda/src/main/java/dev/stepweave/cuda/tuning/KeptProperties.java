package dev.stepweave.cuda.tuning;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Properties;

/**
 * The properties files this package keeps beside the compiled kernels: named after what they key
 * on, read as empty when absent or unreadable, and replaced atomically (two processes writing at
 * once leave one whole file); a folder that cannot be written keeps nothing.
 */
final class KeptProperties {
  private KeptProperties() {}

  /** The file for {@code name} (its parts joined by the caller) in {@code dir}. */
  static Path file(Path dir, String name) {
    return dir.resolve(name.replaceAll("[^A-Za-z0-9.]+", "_") + ".properties");
  }

  /** The file's entries; none when it is absent or cannot be read. */
  static Properties read(Path file) {
    Properties entries = new Properties();
    if (Files.isReadable(file)) {
      try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
        entries.load(in);
      } catch (IOException | IllegalArgumentException e) {
        entries.clear();
      }
    }
    return entries;
  }

  /** Replaces the file with {@code entries}; failures are ignored. */
  static void write(Path file, Properties entries, String comment) {
    try {
      Files.createDirectories(file.getParent());
      Path tmp = Files.createTempFile(file.getParent(), ".kept-", ".tmp");
      try (Writer out = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
        entries.store(out, comment);
      }
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      // A read-only cache: kept in this process only.
    }
  }
}
