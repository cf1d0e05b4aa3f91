package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;

/**
 * What one encode or decode call remembers between its temporal chunks: for every cached
 * convolution (each owns a fixed slot, numbered when the model loads) the trailing frames of the
 * input it saw last. Kept outside the layers so one loaded VAE serves many calls at once and a call
 * can pause between chunks. Only tensors and flags: it serialises as such.
 */
public final class CausalCache {
  private final Tensor[] tails;
  private final boolean[] firstChunkPassed;

  CausalCache(int slots) {
    this.tails = new Tensor[slots];
    this.firstChunkPassed = new boolean[slots];
  }

  public int slots() {
    return tails.length;
  }

  /** The frames remembered in {@code slot}, or null when it has none. */
  public Tensor tail(int slot) {
    return tails[slot];
  }

  void setTail(int slot, Tensor frames) {
    tails[slot] = frames;
  }

  /**
   * Whether a temporal upsampler in {@code slot} has let the first chunk through unchanged and so
   * holds no frames yet (the reference's "Rep" marker).
   */
  public boolean firstChunkPassed(int slot) {
    return firstChunkPassed[slot];
  }

  void markFirstChunkPassed(int slot) {
    firstChunkPassed[slot] = true;
  }
}
