package dev.stepweave.server.tenant;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The keys of a key file as they are now: read at start (a bad file stops the start), read again on
 * SIGHUP. A reload that fails keeps the keys that were in force and logs why, so a typo in the file
 * never locks every client out.
 */
public final class KeyRing implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.stepweave.server");

  private final Path file;
  private volatile ApiKeys keys;
  private final boolean onSignal;
  private final Runnable onHangup = this::reload;

  private KeyRing(Path file, ApiKeys keys) {
    this.file = file;
    this.keys = keys;
    this.onSignal = HangupSignal.subscribe(onHangup);
  }

  /**
   * Reads {@code file} and, when the JVM lets a program handle it, reloads it on SIGHUP.
   *
   * @throws IOException when the file cannot be read
   * @throws IllegalArgumentException naming the line of a bad key
   */
  public static KeyRing open(Path file) throws IOException {
    return new KeyRing(file, read(file));
  }

  /** Whether SIGHUP reloads the file (false where the JVM reserves the signal, e.g. -Xrs). */
  public boolean reloadsOnSignal() {
    return onSignal;
  }

  public Optional<Tenant> find(String key) {
    return keys.find(key);
  }

  /**
   * Reads the file again; on failure keeps the keys in force.
   *
   * @return true when the new keys are in force
   */
  public boolean reload() {
    try {
      ApiKeys fresh = read(file);
      keys = fresh;
      LOG.log(System.Logger.Level.INFO, "reloaded " + fresh.size() + " API keys from " + file);
      return true;
    } catch (IOException | IllegalArgumentException e) {
      LOG.log(
          System.Logger.Level.ERROR,
          "API keys not reloaded, the previous ones stay in force: " + e.getMessage());
      return false;
    }
  }

  private static ApiKeys read(Path file) throws IOException {
    return ApiKeys.parse(Files.readAllLines(file), file.toString());
  }

  /** Stops reloading on SIGHUP. */
  @Override
  public void close() {
    HangupSignal.unsubscribe(onHangup);
  }
}
