package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * A latent decode in progress: the latents, which latent frame comes next (the decoder takes one at
 * a time), the causal cache and the decoded frames so far.
 */
public final class DecodeState {
  private final Tensor latents;
  private final CausalCache cache;
  private final List<Tensor> decoded = new ArrayList<>();
  private int nextFrame;

  DecodeState(Tensor latents, CausalCache cache) {
    this.latents = latents;
    this.cache = cache;
  }

  public Tensor latents() {
    return latents;
  }

  public CausalCache cache() {
    return cache;
  }

  /** The decoded chunks so far, unclamped, each {@code [B, C, t, H, W]}. */
  public List<Tensor> decoded() {
    return List.copyOf(decoded);
  }

  public int nextFrame() {
    return nextFrame;
  }

  public boolean isDone() {
    return nextFrame == latents.dim(2);
  }

  Tensor nextLatentFrame() {
    return latents.slice(2, nextFrame, nextFrame + 1);
  }

  void accept(Tensor chunk) {
    decoded.add(chunk);
    nextFrame++;
  }
}
