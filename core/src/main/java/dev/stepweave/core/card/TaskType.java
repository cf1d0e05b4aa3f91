package dev.stepweave.core.card;

import java.util.Locale;

/** What a request asks a model to do. Declared by the request, never inferred. */
public enum TaskType {
  /** Text to video. */
  T2V,
  /** Text to image (a one-frame video for Wan). */
  T2I;

  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
