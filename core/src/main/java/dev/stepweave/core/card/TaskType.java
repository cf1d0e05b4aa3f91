package dev.stepweave.core.card;

import java.util.Locale;

/** What a request asks a model to do. Declared by the request, never inferred. */
public enum TaskType {
  /** Text to video. */
  T2V,
  /** Text to image (a one-frame video for Wan). */
  T2I,
  /** Image (the first frame) and text to video: Wan2.1 I2V, Wan2.2 I2V A14B. */
  I2V,
  /**
   * Text and, optionally, an image to video with one checkpoint (Wan2.2 TI2V-5B: the image, when
   * given, is the first latent frame).
   */
  TI2V;

  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
