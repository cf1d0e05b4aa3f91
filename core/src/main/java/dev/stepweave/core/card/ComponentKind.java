package dev.stepweave.core.card;

/** The role a component plays in a model. */
public enum ComponentKind {
  DIT,
  VAE,
  TEXT_ENCODER,
  TOKENIZER,
  SCHEDULER
}
