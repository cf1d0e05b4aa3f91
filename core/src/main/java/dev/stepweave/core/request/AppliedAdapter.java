package dev.stepweave.core.request;

import java.util.Objects;

/**
 * An adapter an artifact was made with: which file (by content hash) at which strength.
 *
 * @param name the registered name
 * @param sha256 the file's SHA-256
 * @param scale the strength
 */
public record AppliedAdapter(String name, String sha256, double scale) {
  public AppliedAdapter {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(sha256, "sha256");
  }
}
