package dev.stepweave.core.card;

import java.util.Locale;

/** Numeric precision a model runs in. */
public enum Precision {
  F32,
  BF16,
  F16;

  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The precision of computing with activations of {@code dtype}. */
  public static Precision of(dev.stepweave.tensor.DType dtype) {
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
