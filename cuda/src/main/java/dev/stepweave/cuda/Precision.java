package dev.stepweave.cuda;

/** How a {@link CudaBackend} computes where it has a choice. */
public enum Precision {
  /** F32 everywhere but GEMMs with BF16 weights: the golden parity mode. */
  F32,
  /**
   * The performance mode: activations BF16 ({@link CudaBackend#activationDType()}) — linear, norms,
   * elementwise maps, rope, attention and the fused ops keep a BF16 input BF16, computing in F32
   * inside the kernels (GEMMs accumulate in F32 and write BF16); attention without a bias runs
   * BF16×BF16 on the tensor cores (F32 softmax and accumulation), through cuDNN's fused attention
   * when it is installed and takes the shape (then the result is BF16), else our flash kernel;
   * {@code conv3d} through cuDNN's convolution (BF16 data, F32 accumulation, BF16 result) when it
   * takes the shape, else im2col in F32; results stay within relative L2 1e-2 of the F32
   * references.
   */
  BF16
}
