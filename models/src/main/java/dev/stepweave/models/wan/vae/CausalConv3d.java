package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
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
  private final ConvolutionPrecision precision;

  private CausalConv3d(
      Backend backend,
      Tensor weight,
      Tensor bias,
      int[] stride,
      int pastFrames,
      int[] spatial,
      ConvolutionPrecision precision) {
    this.backend = backend;
    this.precision = precision;
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
      Weights weights,
      int in,
      int out,
      int[] kernel,
      int[] stride,
      int[] padding,
      ConvolutionPrecision precision) {
    Tensor w = weights.take("weight", out, in, kernel[0], kernel[1], kernel[2]);
    Tensor b = weights.take("bias", out);
    return new CausalConv3d(
        weights.backend(),
        w,
        b,
        stride.clone(),
        2 * padding[0],
        new int[] {0, padding[1], padding[2]},
        precision);
  }

  /** A {@code k×k×k} convolution with stride 1 and padding {@code k/2} on every axis. */
  static CausalConv3d cube(
      Weights weights, int in, int out, int k, ConvolutionPrecision precision) {
    int p = k / 2;
    return load(
        weights, in, out, new int[] {k, k, k}, new int[] {1, 1, 1}, new int[] {p, p, p}, precision);
  }

  /**
   * Convolves {@code x [B, C, T, H, W]}; {@code remembered} (null when none) are the frames that
   * precede {@code x}. A convolution without past padding ignores them. The result has x's dtype
   * (the stream's); the convolution reads x as its {@link ConvolutionPrecision} says.
   */
  Tensor apply(Tensor x, Tensor remembered) {
    return after(precision.asInput(backend, x), remembered, x.dtype());
  }

  /**
   * Convolves one chunk of a streamed pass: the frames remembered in {@code slot} precede it, and
   * the chunk's own trailing frames (as the convolution reads them) replace them. The result has
   * x's dtype.
   */
  Tensor applyStreaming(Tensor x, CausalCache cache, int slot) {
    return streaming(precision.asInput(backend, x), cache, slot, x.dtype());
  }

  /**
   * {@code applyStreaming(silu(norm(x)), cache, slot)} with the normalised chunk written, in the
   * convolution's input dtype, straight after its remembered frames ({@link
   * Backend#channelNormAfter}), not copied into a concatenation. The result has x's dtype.
   */
  Tensor applyStreamingNormSilu(ChannelRmsNorm norm, Tensor x, CausalCache cache, int slot) {
    return applyStreamingNormSilu(norm, x, cache, slot, x.dtype());
  }

  /**
   * {@link #applyStreamingNormSilu} with the result as the convolution writes it, in its operands'
   * dtype ({@link ConvolutionPrecision#operands}), not copied into the stream's: for a reader that
   * takes either (a norm; a sum into the stream, which promotes it).
   */
  Tensor applyStreamingNormSiluAsWritten(
      ChannelRmsNorm norm, Tensor x, CausalCache cache, int slot) {
    return applyStreamingNormSilu(norm, x, cache, slot, precision.operands(x));
  }

  private Tensor applyStreamingNormSilu(
      ChannelRmsNorm norm, Tensor x, CausalCache cache, int slot, DType result) {
    DType input = precision.operands(x);
    if (pastFrames == 0) {
      return streaming(norm.applySilu(x, input), cache, slot, result);
    }
    Tensor remembered = cache.tail(slot);
    // A full cache goes in as kept: the fused norm copies (and converts) it into place itself.
    boolean full = remembered != null && Frames.count(remembered) == pastFrames;
    Tensor past = full ? remembered : past(x, remembered);
    Tensor padded = norm.applySiluAfter(past, x, input);
    if (!full) {
      cache.discard(past); // zero-padded: a temporary of this call
    }
    int t = Frames.count(padded);
    Tensor keep = Frames.tail(backend, padded.slice(2, t - Frames.count(x), t), remembered);
    Tensor y = convolve(padded, result);
    cache.setTail(slot, keep);
    // The padded input is the size of the chunk and more; the rest of the layer never reads it.
    cache.discard(padded);
    return y;
  }

  /** {@link #applyStreaming} of an input already in the convolution's input dtype. */
  private Tensor streaming(Tensor input, CausalCache cache, int slot, DType stream) {
    Tensor remembered = cache.tail(slot);
    Tensor keep = Frames.tail(backend, input, remembered);
    Tensor y = after(input, remembered, stream);
    cache.setTail(slot, keep);
    return y;
  }

  /**
   * The convolution of {@code input} (in the convolution's input dtype) after its past: the
   * remembered frames behind the causal zero padding; the result in {@code stream}.
   */
  private Tensor after(Tensor input, Tensor remembered, DType stream) {
    if (pastFrames == 0) {
      return convolve(input, stream);
    }
    return convolve(Frames.concat(backend, List.of(past(input, remembered), input)), stream);
  }

  /**
   * The {@link #pastFrames} frames that precede {@code x}: the remembered ones, after zeros for any
   * the pass has not seen (the causal padding), in x's dtype.
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

  /**
   * The convolution of an input already in the convolution's input dtype (when padded in time, its
   * first {@link #pastFrames} frames its past), the result in {@code stream}.
   */
  private Tensor convolve(Tensor input, DType stream) {
    return precision.convolve(backend, input, weight, bias, stride, spatialPadding, stream);
  }
}
