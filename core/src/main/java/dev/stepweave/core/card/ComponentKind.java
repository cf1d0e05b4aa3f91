package dev.stepweave.core.card;

/** The role a component plays in a model. */
public enum ComponentKind {
  DIT,
  VAE,
  TEXT_ENCODER,
  TOKENIZER,
  SCHEDULER,
  /** Encodes the input image into the states the transformer attends to (CLIP vision). */
  IMAGE_ENCODER,
  /** Turns a decoded image into the image encoder's input (resize, crop, normalise). */
  IMAGE_PROCESSOR
}
