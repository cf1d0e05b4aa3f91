package dev.stepweave.core.request;

import java.util.Objects;

/**
 * An adapter a request runs with: a name the deployment registered and the strength to apply it at.
 *
 * @param name the registered adapter's name (its file name without {@code .safetensors})
 * @param scale the strength, in {@code [-MAX_SCALE, MAX_SCALE]}
 */
public record AdapterUse(String name, double scale) {
  /** The largest strength a request may give (either sign). */
  public static final double MAX_SCALE = 4.0;

  /** The most adapters one request may stack. */
  public static final int MAX_PER_REQUEST = 8;

  public AdapterUse {
    Objects.requireNonNull(name, "adapter name");
  }

  /** {@code name:scale}, as provenance and logs print it. */
  @Override
  public String toString() {
    return name + ":" + scale;
  }
}
