package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;

/**
 * What a VAE's convolutions read. Their results always join the stream in its own dtype (F32 in
 * production, as the reference keeps its VAE); what changes is the operands.
 *
 * <p>{@link #BF16_OPERANDS}: inputs and filters in BF16, so cuDNN runs them on the tensor cores at
 * BF16 rate, accumulating in F32 and writing the F32 result unrounded. A norm computes in F32 and
 * rounds once on its way into the convolution that reads it; residual sums stay F32; the causal
 * caches keep the BF16 inputs they remember. The products are the only BF16 error. Emulated on the
 * CPU (MixedPrecisionEmulationTest) the residual Wan2.2 VAE's golden decode lands at 5.9e-3
 * relative L2 and its encode at 3.1e-3, within the BF16 mode's 1e-2; the plain Wan2.1 VAE's decode
 * at 1.09e-2, over it. (Rounding every activation instead put the two at 1.00e-2 and 1.56e-2 on the
 * GPU: docs/performance.md.)
 *
 * <p>{@link #AS_GIVEN}: every convolution reads its input in the dtype it comes in — F32 in exact
 * mode, on the CPU and for the Wan2.1 VAE, which cuDNN then computes in TF32 in the performance
 * mode.
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

  /** {@code conv3d} of {@code x} read as {@link #asInput}, the result in {@code stream}. */
  Tensor convolve(
      Backend backend,
      Tensor x,
      Tensor weight,
      Tensor bias,
      int[] stride,
      int[] padding,
      DType stream) {
    return backend.conv3d(asInput(backend, x), weight, bias, stride, padding, stream);
  }
}
