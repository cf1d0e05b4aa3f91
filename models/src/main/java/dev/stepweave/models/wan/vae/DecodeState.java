package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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

  /**
   * The state's tensors by name (decoded chunks and the causal cache; not the latents, which the
   * caller keeps), on the decoder's device.
   */
  public Map<String, Tensor> tensors() {
    Map<String, Tensor> out = new LinkedHashMap<>();
    for (int i = 0; i < decoded.size(); i++) {
      out.put("decoded." + i, decoded.get(i));
    }
    cache.tensors().forEach((k, v) -> out.put("cache." + k, v));
    return out;
  }

  /** The state's counters and flags as strings. */
  public Map<String, String> scalars() {
    return Map.of("next_frame", Integer.toString(nextFrame), "cache_flags", cache.flags());
  }

  /** Rebuilds a state from {@link #tensors} and {@link #scalars} over the same latents. */
  static DecodeState restore(
      Tensor latents, int cacheSlots, Map<String, Tensor> tensors, Map<String, String> scalars) {
    String next = scalars.get("next_frame");
    String flags = scalars.get("cache_flags");
    if (next == null || flags == null) {
      throw new IllegalArgumentException("decode state lacks next_frame or cache_flags");
    }
    Map<String, Tensor> cacheTensors = new LinkedHashMap<>();
    tensors.forEach(
        (k, v) -> {
          if (k.startsWith("cache.")) {
            cacheTensors.put(k.substring("cache.".length()), v);
          }
        });
    DecodeState s = new DecodeState(latents, CausalCache.restore(cacheSlots, cacheTensors, flags));
    int n = Integer.parseInt(next);
    if (n < 0 || n > latents.dim(2)) {
      throw new IllegalArgumentException("decode state next_frame " + n + " outside the latents");
    }
    for (int i = 0; i < n; i++) {
      Tensor chunk = tensors.get("decoded." + i);
      if (chunk == null) {
        throw new IllegalArgumentException("decode state lacks decoded." + i);
      }
      s.accept(chunk);
    }
    return s;
  }
}
