package dev.stepweave.tensor.rng;

/**
 * The Box–Muller transform of torch's vectorised CPU normal fill (the AVX2 kernel that x86 builds
 * dispatch to), reproduced bit for bit in float arithmetic.
 *
 * <p>torch turns 16 uniforms {@code u[0..15]} into 16 normals: {@code r = sqrt(-2 log(1 - u[j]))},
 * {@code θ = 2π·u[j+8]}, {@code out[j] = r cos θ}, {@code out[j+8] = r sin θ}. Its log and sincos
 * are the Cephes single-precision polynomials (not libm), and the compiler fused some multiply–adds
 * into FMAs; both matter for exact parity, so every step below keeps the kernel's order and its
 * fusions ({@link Math#fma}) exactly.
 */
final class AvxBoxMuller {
  /** Values transformed together. */
  static final int BLOCK = 16;

  private static final int HALF = BLOCK / 2;
  private static final float TWO_PI = (float) (2.0 * Math.PI);

  // Cephes logf: the range reduction threshold, the polynomial, and ln 2 split in two.
  private static final float SQRT_HALF = 0.707106781186547524f;
  private static final float[] LOG_POLY = {
    7.0376836292E-2f,
    -1.1514610310E-1f,
    1.1676998740E-1f,
    -1.2420140846E-1f,
    1.4249322787E-1f,
    -1.6668057665E-1f,
    2.0000714765E-1f,
    -2.4999993993E-1f,
    3.3333331174E-1f
  };
  private static final float LN2_LOW = -2.12194440e-4f;
  private static final float LN2_HIGH = 0.693359375f;
  private static final float SMALLEST_NORMAL = Float.MIN_NORMAL;

  // Cephes sinf/cosf: 4/π, π/4 split in three for the argument reduction, and the two polynomials.
  private static final float FOUR_OVER_PI = 1.27323954473516f;
  private static final float MINUS_PI4_A = -0.78515625f;
  private static final float MINUS_PI4_B = -2.4187564849853515625e-4f;
  private static final float MINUS_PI4_C = -3.77489497744594108e-8f;
  private static final float COS_P0 = 2.443315711809948E-005f;
  private static final float COS_P1 = -1.388731625493765E-003f;
  private static final float COS_P2 = 4.166664568298827E-002f;
  private static final float SIN_P0 = -1.9515295891E-4f;
  private static final float SIN_P1 = 8.3321608736E-3f;
  private static final float SIN_P2 = -1.6666654611E-1f;

  private AvxBoxMuller() {}

  /** Replaces the uniforms in {@code data[offset, offset + 16)} by standard normals. */
  static void transform(float[] data, int offset) {
    for (int j = 0; j < HALF; j++) {
      float u1 = 1f - data[offset + j]; // [0, 1) -> (0, 1] so the log is finite
      float u2 = data[offset + j + HALF];
      float radius = (float) Math.sqrt(-2f * log(u1));
      float theta = TWO_PI * u2;
      data[offset + j] = radius * cos(theta);
      data[offset + j + HALF] = radius * sin(theta);
    }
  }

  static float log(float v) {
    float x = Math.max(v, SMALLEST_NORMAL);
    int bits = Float.floatToRawIntBits(x);
    float e = (float) ((bits >>> 23) - 0x7f) + 1f;
    // mantissa scaled into [0.5, 1)
    x = Float.intBitsToFloat((bits & ~0x7f800000) | Float.floatToRawIntBits(0.5f));
    boolean small = x < SQRT_HALF;
    float tmp = small ? x : 0f;
    x = x - 1f;
    e = e - (small ? 1f : 0f);
    x = x + tmp;
    float z = x * x;
    float y = LOG_POLY[0];
    for (int i = 1; i < LOG_POLY.length; i++) {
      y = Math.fma(y, x, LOG_POLY[i]);
    }
    y = y * x;
    y = Math.fma(y, z, e * LN2_LOW);
    y = Math.fma(-z, 0.5f, y);
    float result = Math.fma(e, LN2_HIGH, x + y);
    return v <= 0f ? Float.NaN : result;
  }

  static float sin(float v) {
    Reduced r = reduce(v);
    float s = r.sinPolynomialSelected() ? r.sinPoly : r.cosPoly;
    boolean negative = (Float.floatToRawIntBits(v) < 0) ^ ((r.octant & 4) != 0);
    return negative ? -s : s;
  }

  static float cos(float v) {
    Reduced r = reduce(v);
    float c = r.sinPolynomialSelected() ? r.cosPoly : r.sinPoly;
    boolean negative = ((~(r.octant - 2)) & 4) != 0;
    return negative ? -c : c;
  }

  /** |v| reduced to [-π/4, π/4] with its octant, and both polynomials evaluated there. */
  private static Reduced reduce(float v) {
    float x = Math.abs(v);
    int octant = ((int) (x * FOUR_OVER_PI) + 1) & ~1;
    float k = octant;
    x = Math.fma(k, MINUS_PI4_A, x);
    x = Math.fma(k, MINUS_PI4_B, x);
    x = Math.fma(k, MINUS_PI4_C, x);
    float z = x * x;

    float c = Math.fma(COS_P0, z, COS_P1);
    c = Math.fma(c, z, COS_P2);
    c = c * z;
    c = Math.fma(c, z, -(z * 0.5f));
    c = c + 1f;

    float s = Math.fma(SIN_P0, z, SIN_P1);
    s = Math.fma(s, z, SIN_P2);
    s = s * z;
    s = Math.fma(s, x, x);
    return new Reduced(octant, s, c);
  }

  private record Reduced(int octant, float sinPoly, float cosPoly) {
    /** In octants 0 and 4 (mod 8, after rounding up to even) the sine polynomial gives the sine. */
    boolean sinPolynomialSelected() {
      return (octant & 2) == 0;
    }
  }
}
