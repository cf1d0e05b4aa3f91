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

  public static TaskType parse(String s) {
    for (TaskType t : values()) {
      if (t.wireName().equalsIgnoreCase(s)) {
        return t;
      }
    }
    throw new IllegalArgumentException("unknown task '" + s + "' (known: t2v, t2i)");
  }
}
