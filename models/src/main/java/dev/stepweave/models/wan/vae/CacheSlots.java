package dev.stepweave.models.wan.vae;

/** Hands out consecutive {@link CausalCache} slot numbers while an encoder or decoder loads. */
final class CacheSlots {
  private int next;

  int allocate() {
    return next++;
  }

  int count() {
    return next;
  }
}
