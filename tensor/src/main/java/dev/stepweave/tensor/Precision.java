package dev.stepweave.tensor;

import java.util.Locale;

/**
 * Numeric precision a model runs in: what a card declares and, for the CUDA backend, how it
 * computes where it has a choice (F32 or BF16; the CPU backend always computes in F32).
 */
public enum Precision {
  /** F32 everywhere but GEMMs with BF16 weights: the golden parity mode. */
  F32,
  /**
   * The performance mode: activations BF16 ({@link Backend#activationDType()}) — linear, norms,
   * elementwise maps, rope, attention and the fused ops keep a BF16 input BF16, computing in F32
   * inside the kernels (GEMMs accumulate in F32 and write BF16); attention without a bias runs
   * BF16×BF16 on the tensor cores (F32 softmax and accumulation), through cuDNN's fused attention
   * when it is installed and takes the shape (then the result is BF16), else our flash kernel;
   * {@code conv3d} through cuDNN's convolution (BF16 data, F32 accumulation, BF16 result) when it
   * takes the shape, else im2col in F32; results stay within relative L2 1e-2 of the F32
   * references.
   */
  BF16,
  /** Half precision: a card may declare it; no backend computes in it. */
  F16;

  /** The lower-case name cards and requests spell it with ({@code f32}, {@code bf16}, …). */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The precision of computing with activations of {@code dtype}. */
  public static Precision of(DType dtype) {
    return switch (dtype) {
      case F32 -> F32;
      case BF16 -> BF16;
      case F16 -> F16;
      default -> throw new IllegalArgumentException("no compute precision for " + dtype);
    };
  }

  public static Precision parse(String s) {
    return switch (s.toLowerCase(Locale.ROOT)) {
      case "f32", "fp32", "float32" -> F32;
      case "bf16", "bfloat16" -> BF16;
      case "f16", "fp16", "float16" -> F16;
      default ->
          throw new IllegalArgumentException(
              "unknown precision '" + s + "' (known: f32, bf16, f16)");
    };
  }
}
