package dev.stepweave.core.request;

import java.util.Objects;

/** One typed input of a request. */
public sealed interface ModalPart {

  /** A text prompt. */
  record Text(String text) implements ModalPart {
    public Text {
      Objects.requireNonNull(text, "text");
    }
  }
}
