package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend.StepMemory;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * What one encode or decode call remembers between its temporal chunks: for every cached
 * convolution (each owns a fixed slot, numbered when the model loads) the trailing frames of the
 * input it saw last. Kept outside the layers so one loaded VAE serves many calls at once and a call
 * can pause between chunks. Only tensors and flags: it serialises as such.
 */
public final class CausalCache {
  private final Tensor[] tails;
  private final boolean[] firstChunkPassed;
  // The state stepping this cache frees a replaced tail (and a layer's dead temporaries) at once,
  // not when the step ends: a decode's old and new tails together were its largest holding
  // (3.4 GB each at 480p).
  private Consumer<Tensor> release = t -> {};

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
    Tensor old = tails[slot];
    tails[slot] = frames;
    if (old != null && old != frames) {
      release.accept(old);
    }
  }

  /**
   * Declares a temporary of the running step dead: nothing issued after this reads it. The state
   * stepping this cache may free it now (unless something it holds shares its storage).
   */
  void discard(Tensor dead) {
    release.accept(dead);
  }

  /**
   * Hands every tail a later {@link #setTail} replaces, and whatever {@link #discard} is given, to
   * {@code release} (after the slot holds the new tail), for the state that steps this cache. A
   * {@link #copy} starts without.
   */
  void releaseWith(Consumer<Tensor> release) {
    this.release = release;
  }

  /**
   * A release for {@link #releaseWith}: frees a dead tensor through {@code memory} at once, unless
   * one of {@code held} shares its storage (a tail can be a view of a chunk, or of frames another
   * tile's cache also views).
   */
  static Consumer<Tensor> releasingUnlessHeld(StepMemory memory, Supplier<Stream<Tensor>> held) {
    return dead -> {
      var storage = dead.storage();
      if (held.get().noneMatch(t -> t.storage() == storage)) {
        memory.releaseNow(dead);
      }
    };
  }

  /** Every remembered frame tensor (the slots that have some), for keeping them alive. */
  List<Tensor> remembered() {
    List<Tensor> out = new ArrayList<>(tails.length);
    for (Tensor t : tails) {
      if (t != null) {
        out.add(t);
      }
    }
    return out;
  }

  /** Forgets every remembered frame (the flags stay): for a pass that has ended. */
  void clear() {
    Arrays.fill(tails, null);
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

  /** The remembered frames as named tensors ({@code tail.<slot>}), for serialisation. */
  Map<String, Tensor> tensors() {
    Map<String, Tensor> out = new LinkedHashMap<>();
    for (int i = 0; i < tails.length; i++) {
      if (tails[i] != null) {
        out.put("tail." + i, tails[i]);
      }
    }
    return out;
  }

  /** The per-slot flags as a string of 0/1, for serialisation. */
  String flags() {
    StringBuilder sb = new StringBuilder(firstChunkPassed.length);
    for (boolean b : firstChunkPassed) {
      sb.append(b ? '1' : '0');
    }
    return sb.toString();
  }

  /** A copy to step instead of this cache (the frames are shared: they are never written). */
  CausalCache copy() {
    CausalCache c = new CausalCache(tails.length);
    System.arraycopy(tails, 0, c.tails, 0, tails.length);
    System.arraycopy(firstChunkPassed, 0, c.firstChunkPassed, 0, tails.length);
    return c;
  }

  /** Rebuilds a cache from {@link #tensors} and {@link #flags}. */
  static CausalCache restore(int slots, Map<String, Tensor> tensors, String flags) {
    if (flags.length() != slots) {
      throw new IllegalArgumentException(
          "causal cache has " + flags.length() + " slots, the model has " + slots);
    }
    CausalCache c = new CausalCache(slots);
    for (int i = 0; i < slots; i++) {
      c.tails[i] = tensors.get("tail." + i);
      c.firstChunkPassed[i] = flags.charAt(i) == '1';
    }
    return c;
  }
}
