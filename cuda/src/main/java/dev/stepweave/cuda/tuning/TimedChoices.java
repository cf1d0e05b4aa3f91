package dev.stepweave.cuda.tuning;

import java.nio.file.Path;
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
  private final Properties entries;

  private TimedChoices(Path file, Properties entries) {
    this.file = file;
    this.entries = entries;
  }

  /**
   * The choices of {@code kind} in {@code dir} (null: this process only) for this device and {@code
   * library} (its name and version, e.g. "cudnn9.14.0"), read if present.
   */
  public static TimedChoices open(
      Path dir, String kind, String device, String arch, String library) {
    // Unreadable: chosen by timing again.
    Path file =
        dir == null
            ? null
            : KeptProperties.file(dir, kind + "-" + device + "-" + arch + "-" + library);
    return new TimedChoices(file, file == null ? new Properties() : KeptProperties.read(file));
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
    KeptProperties.write(
        file, entries, "cuDNN plan choices by timing (stepweave); delete to time again");
  }
}
