package dev.stepweave.core.request;

import java.util.Objects;

/** One typed input of a request. */
public sealed interface ModalPart {

  /**
   * Starting latents for a denoising loop, instead of seeded noise (parity runs against a
   * recording's initial latents; editing workflows).
   */
  record Latents(dev.stepweave.tensor.Tensor latents) implements ModalPart {
    public Latents {
      Objects.requireNonNull(latents, "latents");
    }
  }

  /** A text prompt. */
  record Text(String text) implements ModalPart {
    public Text {
      Objects.requireNonNull(text, "text");
    }
  }
}
