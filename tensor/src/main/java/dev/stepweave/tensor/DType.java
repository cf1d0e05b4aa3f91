package dev.stepweave.tensor;

import java.util.Locale;

/**
 * Element types a tensor can be stored in. CPU compute is always F32; the other floating types are
 * storage formats that are widened on load (checkpoints are usually BF16 or F16).
 */
public enum DType {
  F32(4, true, "F32"),
  F16(2, true, "F16"),
  BF16(2, true, "BF16"),
  F64(8, true, "F64"),
  I64(8, false, "I64"),
  I32(4, false, "I32"),
  I8(1, false, "I8"),
  U8(1, false, "U8"),
  BOOL(1, false, "BOOL");

  private final int byteSize;
  private final boolean floating;
  private final String safetensorsName;

  DType(int byteSize, boolean floating, String safetensorsName) {
    this.byteSize = byteSize;
    this.floating = floating;
    this.safetensorsName = safetensorsName;
  }

  /** Bytes per element. */
  public int byteSize() {
    return byteSize;
  }

  public boolean isFloating() {
    return floating;
  }

  /** The dtype's name in a safetensors header ("F32", "BF16", …). */
  public String safetensorsName() {
    return safetensorsName;
  }

  /**
   * Parses a safetensors dtype name.
   *
   * @throws IllegalArgumentException naming the unknown dtype
   */
  public static DType fromSafetensorsName(String name) {
    for (DType t : values()) {
      if (t.safetensorsName.equals(name)) {
        return t;
      }
    }
    throw new IllegalArgumentException("unknown dtype '" + name + "'");
  }

  /** Parses user-facing names: "f32", "float32", "bf16", "bfloat16", "fp16", … */
  public static DType parse(String name) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case "f32", "fp32", "float32", "float" -> F32;
      case "f16", "fp16", "float16", "half" -> F16;
      case "bf16", "bfloat16" -> BF16;
      case "f64", "fp64", "float64", "double" -> F64;
      case "i64", "int64", "long" -> I64;
      case "i32", "int32", "int" -> I32;
      case "i8", "int8" -> I8;
      case "u8", "uint8" -> U8;
      case "bool" -> BOOL;
      default -> throw new IllegalArgumentException("unknown dtype '" + name + "'");
    };
  }

  /** Widens a bfloat16 bit pattern to float (exact). */
  public static float bf16ToFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }

  /** Narrows a float to bfloat16 with round-to-nearest-even, as torch does; NaN stays NaN. */
  public static short floatToBf16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7fffffff) > 0x7f800000) {
      return (short) ((bits >>> 16) | 0x40);
    }
    int rounding = 0x7fff + ((bits >>> 16) & 1);
    return (short) ((bits + rounding) >>> 16);
  }
}
