package dev.stepweave.core.extend;

import java.nio.file.Path;
import java.util.Objects;

/**
 * An adapter a deployment registered: requests may name it, and only it (the trust boundary of
 * design §11 — a request never names a path).
 *
 * @param name what requests call it
 * @param file the safetensors file
 * @param sha256 the file's content hash when it was registered; its version in every cache key
 * @param bytes the file's size
 * @param info what the model read from its header
 */
public record RegisteredAdapter(
    String name, Path file, String sha256, long bytes, AdapterInfo info) {
  public RegisteredAdapter {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(sha256, "sha256");
    Objects.requireNonNull(info, "info");
  }

  /** The version cache keys and graph keys carry: the first 16 hex digits of the hash. */
  public String version() {
    return sha256.substring(0, 16);
  }
}
