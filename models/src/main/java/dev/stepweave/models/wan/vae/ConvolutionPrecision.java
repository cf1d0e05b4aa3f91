package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;

/**
 * What a VAE's convolutions read and write. The stream between them (residual sums, the causal
 * caches' sources, the decoded video) keeps its own dtype (F32 in production, as the reference
 * keeps its VAE); what changes is the convolutions' operands and results.
 *
 * <p>{@link #BF16_OPERANDS}: inputs and filters in BF16, and the result in BF16 (the CUDA backend
 * adds the F32 bias in a pass after cuDNN's rounded result, so a second rounding), so cuDNN runs
 * its BF16 tensor-core engines, which write BF16: a graph that writes F32 from BF16 operands is
 * offered a single engine several times slower (H100, 2026-12-06: the 720p×121 Wan2.2 decode 10.5 s
 * that way, docs/performance.md). A norm computes in F32 and rounds once on its way into the
 * convolution that reads it; residual sums stay F32; the causal caches keep the BF16 inputs they
 * remember. Emulated on the CPU with one rounding (MixedPrecisionEmulationTest) the residual Wan2.2
 * VAE's golden decode lands at 7.3e-3 relative L2 and its encode at 3.8e-3, within the BF16 mode's
 * 1e-2 (on the GPU, with the second, 8.5e-3 and 5.1e-3); the plain Wan2.1 VAE's decode at 1.36e-2,
 * over it. (Rounding every activation, the residual sums too, put the two at 1.00e-2 and 1.56e-2 on
 * the GPU.)
 *
 * <p>{@link #AS_GIVEN}: every convolution reads its input in the dtype it comes in and writes the
 * stream's — F32 in exact mode, on the CPU and for the Wan2.1 VAE, which cuDNN then computes in
 * TF32 in the performance mode.
 */
enum ConvolutionPrecision {
  AS_GIVEN,
  BF16_OPERANDS;

  /**
   * The precision of a VAE of {@code config} on {@code backend}: BF16 operands for a residual
   * (Wan2.2) VAE on a backend with BF16 activations, whose golden decode they keep within the
   * bound; as given otherwise.
   */
  static ConvolutionPrecision of(Backend backend, WanVaeConfig config) {
    return backend.activationDType() == DType.BF16 && config.isResidual()
        ? BF16_OPERANDS
        : AS_GIVEN;
  }

  /** The dtype a convolution reads an input of the stream {@code x} in. */
  DType operands(Tensor x) {
    return this == BF16_OPERANDS ? DType.BF16 : x.dtype();
  }

  /** {@code x} as a convolution reads it (itself when no conversion is due). */
  Tensor asInput(Backend backend, Tensor x) {
    DType dtype = operands(x);
    return x.dtype() == dtype ? x : backend.upload(x, dtype);
  }

  /**
   * {@code conv3d} of {@code x} read as {@link #asInput}, the result in {@code result}: written in
   * the operands' dtype ({@link #operands}), then converted when {@code result} differs.
   */
  Tensor convolve(
      Backend backend,
      Tensor x,
      Tensor weight,
      Tensor bias,
      int[] stride,
      int[] padding,
      DType result) {
    if (this == AS_GIVEN) {
      return backend.conv3d(asInput(backend, x), weight, bias, stride, padding, result);
    }
    // Scoped: the BF16 copies (of the input, of the result) are dead once the conversion is issued.
    return backend.scoped(
        () -> {
          Tensor y = backend.conv3d(asInput(backend, x), weight, bias, stride, padding, DType.BF16);
          return y.dtype() == result ? y : backend.upload(y, result);
        });
  }
}
