package dev.stepweave.core.card;

/** The kinds of schedulable step a loop emits (seed §6.1). */
public enum WorkKind {
  DIFFUSION_STEP,
  ENCODER_CHUNK,
  VAE_TILE,
  AR_TOKEN
}
