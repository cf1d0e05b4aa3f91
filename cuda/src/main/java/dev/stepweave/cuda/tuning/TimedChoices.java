package dev.stepweave.cuda.tuning;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.Properties;

/**
 * Choices among a library's candidates (cuDNN engines, cuBLASLt algorithms) made by timing, kept on
 * disk per (device, architecture, library version) beside the compiled kernels, so a later process
 * takes the same candidate for a shape without timing again: its cold start is shorter, and two
 * processes compute a shape the same way (a run resumed in another process then gives the same
 * bits).
 *
 * <p>An entry names a shape's key, the chosen candidate's position in the library's heuristics
 * order and its label; it is used only when the same position still holds the same candidate (the
 * heuristics' list is deterministic for one device and library version — the label guards against a
 * list that changed). A file that cannot be read or written is ignored: the choice is then timed,
 * as without a cache.
 */
public final class TimedChoices {
  private final Path file;
  private final Properties entries = new Properties();

  private TimedChoices(Path file) {
    this.file = file;
  }

  /**
   * The choices of {@code kind} in {@code dir} (null: this process only) for this device and {@code
   * library} (its name and version, e.g. "cudnn9.14.0"), read if present.
   */
  public static TimedChoices open(
      Path dir, String kind, String device, String arch, String library) {
    String name =
        (kind + "-" + device + "-" + arch + "-" + library).replaceAll("[^A-Za-z0-9.]+", "_")
            + ".properties";
    TimedChoices choices = new TimedChoices(dir == null ? null : dir.resolve(name));
    if (choices.file != null && Files.isReadable(choices.file)) {
      try (Reader in = Files.newBufferedReader(choices.file, StandardCharsets.UTF_8)) {
        choices.entries.load(in);
      } catch (IOException | IllegalArgumentException e) {
        choices.entries.clear(); // unreadable: choose by timing again
      }
    }
    return choices;
  }

  /** The recorded candidate position for {@code key}, if its engine is still {@code engineAt}. */
  public synchronized Optional<Integer> lookup(
      String key, java.util.function.IntFunction<String> engineAt, int candidates) {
    String value = entries.getProperty(key);
    if (value == null) {
      return Optional.empty();
    }
    int bar = value.indexOf('|');
    try {
      int index = Integer.parseInt(value.substring(0, bar));
      String engine = value.substring(bar + 1);
      return index >= 0 && index < candidates && engine.equals(engineAt.apply(index))
          ? Optional.of(index)
          : Optional.empty();
    } catch (RuntimeException malformed) {
      return Optional.empty();
    }
  }

  /** Records a timed choice and rewrites the file (atomically; failures are ignored). */
  public synchronized void record(String key, int index, String engine) {
    entries.setProperty(key, index + "|" + engine);
    if (file == null) {
      return;
    }
    try {
      Files.createDirectories(file.getParent());
      Path tmp = Files.createTempFile(file.getParent(), ".plans-", ".tmp");
      try (Writer out = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
        entries.store(out, "cuDNN plan choices by timing (stepweave); delete to time again");
      }
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      // A read-only cache: the choice stays in this process only.
    }
  }
}
