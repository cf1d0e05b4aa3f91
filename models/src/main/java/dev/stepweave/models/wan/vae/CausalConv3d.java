package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.List;

/**
 * A 3-D convolution that never looks at future frames: time is padded only on the past side (by
 * twice the nominal time padding), height and width symmetrically. Frames remembered from the
 * previous chunk stand in for that much of the past padding.
 */
final class CausalConv3d {
  private final Backend backend;
  private final Tensor weight;
  private final Tensor bias;
  private final int[] stride;
  private final int pastFrames;
  private final int[] spatialPadding;

  private CausalConv3d(
      Backend backend, Tensor weight, Tensor bias, int[] stride, int pastFrames, int[] spatial) {
    this.backend = backend;
    this.weight = weight;
    this.bias = bias;
    this.stride = stride;
    this.pastFrames = pastFrames;
    this.spatialPadding = spatial;
  }

  /**
   * Loads {@code weight [out, in, kernel...]} and {@code bias [out]}.
   *
   * @param padding nominal {@code (t, h, w)} padding as the reference declares it
   */
  static CausalConv3d load(
      Weights weights, int in, int out, int[] kernel, int[] stride, int[] padding) {
    Tensor w = weights.take("weight", out, in, kernel[0], kernel[1], kernel[2]);
    Tensor b = weights.take("bias", out);
    return new CausalConv3d(
        weights.backend(),
        w,
        b,
        stride.clone(),
        2 * padding[0],
        new int[] {0, padding[1], padding[2]});
  }

  /** A {@code k×k×k} convolution with stride 1 and padding {@code k/2} on every axis. */
  static CausalConv3d cube(Weights weights, int in, int out, int k) {
    int p = k / 2;
    return load(weights, in, out, new int[] {k, k, k}, new int[] {1, 1, 1}, new int[] {p, p, p});
  }

  /**
   * Convolves {@code x [B, C, T, H, W]}; {@code remembered} (null when none) are the frames that
   * precede {@code x}. A convolution without past padding ignores them.
   */
  Tensor apply(Tensor x, Tensor remembered) {
    if (pastFrames == 0) {
      return backend.conv3d(x, weight, bias, stride, spatialPadding);
    }
    return convolvePadded(Frames.concat(backend, List.of(past(x, remembered), x)));
  }

  /**
   * Convolves one chunk of a streamed pass: the frames remembered in {@code slot} precede it, and
   * the chunk's own trailing frames replace them.
   */
  Tensor applyStreaming(Tensor x, CausalCache cache, int slot) {
    Tensor remembered = cache.tail(slot);
    Tensor keep = Frames.tail(backend, x, remembered);
    Tensor y = apply(x, remembered);
    cache.setTail(slot, keep);
    return y;
  }

  /**
   * {@code applyStreaming(silu(norm(x)), cache, slot)} with the normalised chunk written straight
   * after its remembered frames ({@link Backend#channelNormAfter}), not copied into a
   * concatenation.
   */
  Tensor applyStreamingNormSilu(ChannelRmsNorm norm, Tensor x, CausalCache cache, int slot) {
    if (pastFrames == 0) {
      return applyStreaming(norm.applySilu(x), cache, slot);
    }
    Tensor remembered = cache.tail(slot);
    // A full cache goes in as kept: the fused norm copies (and converts) it into place itself.
    boolean full = remembered != null && Frames.count(remembered) == pastFrames;
    Tensor past = full ? remembered : past(x, remembered);
    Tensor padded = norm.applySiluAfter(past, x);
    if (!full) {
      cache.discard(past); // zero-padded: a temporary of this call
    }
    int t = Frames.count(padded);
    Tensor keep = Frames.tail(backend, padded.slice(2, t - Frames.count(x), t), remembered);
    Tensor y = convolvePadded(padded);
    cache.setTail(slot, keep);
    // The padded input is the size of the chunk and more; the rest of the layer never reads it.
    cache.discard(padded);
    return y;
  }

  /**
   * The {@link #pastFrames} frames that precede {@code x}: the remembered ones, after zeros for any
   * the pass has not seen (the causal padding).
   */
  private Tensor past(Tensor x, Tensor cached) {
    Tensor remembered = Frames.recalled(backend, cached, x);
    int have = remembered == null ? 0 : Frames.count(remembered);
    if (have > pastFrames) {
      throw new IllegalStateException(
          have + " remembered frames for a convolution that looks back " + pastFrames);
    }
    if (have == pastFrames) {
      return remembered;
    }
    Tensor zeros = Frames.zeros(backend, x, pastFrames - have);
    return remembered == null ? zeros : Frames.concat(backend, List.of(zeros, remembered));
  }

  /** The convolution of an input whose first {@link #pastFrames} frames are its past padding. */
  private Tensor convolvePadded(Tensor padded) {
    return backend.conv3d(padded, weight, bias, stride, spatialPadding);
  }
}
