package dev.stepweave.models.text;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Keeps the DJL HuggingFace tokenizers binding off the network.
 *
 * <p>The binding's jar bundles {@code libtokenizers} for linux-x86_64/aarch64, macOS and Windows
 * and copies it into a cache directory on first use. Left alone it can still reach out: on a
 * machine where it detects CUDA it downloads a CUDA build of the library instead of the bundled CPU
 * one, and every tokenizer creation "calls home" (EC2 metadata and a telemetry URL). DJL's offline
 * mode ({@code ai.djl.offline}) makes it take the bundled CPU library and skips the call home;
 * {@code OPT_OUT_TRACKING} disables the telemetry independently. The cache directory is set
 * explicitly so the extraction works on a fresh machine whatever the home directory looks like.
 *
 * <p>These are JVM-wide system properties read when the library loads, so {@link #enforce} must run
 * before the first use of any {@code ai.djl} class; {@link PromptTokenizer} calls it.
 */
final class OfflineTokenizerLibrary {
  static final String OFFLINE_PROPERTY = "ai.djl.offline";
  static final String TRACKING_PROPERTY = "OPT_OUT_TRACKING";
  static final String CACHE_DIR_PROPERTY = "ENGINE_CACHE_DIR";

  /** Overrides where Stepweave keeps files it extracts (native libraries). */
  static final String STEPWEAVE_CACHE_PROPERTY = "stepweave.cache.dir";

  static final String STEPWEAVE_CACHE_ENV = "STEPWEAVE_CACHE_DIR";

  private OfflineTokenizerLibrary() {}

  static synchronized void enforce() {
    System.setProperty(OFFLINE_PROPERTY, "true");
    System.setProperty(TRACKING_PROPERTY, "true");
    // DJL lets the environment variable win over the property; respect either if the user set it.
    if (System.getenv(CACHE_DIR_PROPERTY) == null
        && System.getProperty(CACHE_DIR_PROPERTY) == null) {
      System.setProperty(CACHE_DIR_PROPERTY, stepweaveCacheDir().resolve("djl").toString());
    }
  }

  /** {@code stepweave.cache.dir}, else $STEPWEAVE_CACHE_DIR, else ~/.cache/stepweave, else tmp. */
  static Path stepweaveCacheDir() {
    String configured = System.getProperty(STEPWEAVE_CACHE_PROPERTY);
    if (configured == null) {
      configured = System.getenv(STEPWEAVE_CACHE_ENV);
    }
    if (configured != null && !configured.isBlank()) {
      return Path.of(configured);
    }
    Path home = Path.of(System.getProperty("user.home", ""));
    if (!home.toString().isEmpty() && Files.isWritable(home)) {
      return home.resolve(".cache").resolve("stepweave");
    }
    return Path.of(System.getProperty("java.io.tmpdir"))
        .resolve("stepweave-" + System.getProperty("user.name", "user"));
  }
}
