package dev.stepweave.tensor.cpu;

/**
 * Scalar special functions the JDK lacks, accurate to float precision. Built on {@code StrictMath}
 * so the bits do not depend on which JIT tier (or intrinsic) runs them.
 */
final class ScalarMath {
  private static final double TWO_OVER_SQRT_PI = 1.1283791670955126;

  private ScalarMath() {}

  /**
   * The error function to about 1e-7 relative: a Taylor series near zero, where erf is nearly
   * linear, and a Chebyshev fit of erfc (Numerical Recipes' erfcc) further out.
   */
  static float erf(float xf) {
    double x = xf;
    double ax = Math.abs(x);
    if (ax < 0.5) {
      double x2 = x * x;
      double series =
          1
              + x2
                  * (-1.0 / 3
                      + x2 * (1.0 / 10 + x2 * (-1.0 / 42 + x2 * (1.0 / 216 + x2 * (-1.0 / 1320)))));
      return (float) (TWO_OVER_SQRT_PI * x * series);
    }
    double erfc = erfc(ax);
    return (float) (x >= 0 ? 1 - erfc : erfc - 1);
  }

  /** The complementary error function for {@code ax >= 0}, to about 1.2e-7 relative. */
  private static double erfc(double ax) {
    double t = 1 / (1 + 0.5 * ax);
    double poly =
        -ax * ax
            - 1.26551223
            + t
                * (1.00002368
                    + t
                        * (0.37409196
                            + t
                                * (0.09678418
                                    + t
                                        * (-0.18628806
                                            + t
                                                * (0.27886807
                                                    + t
                                                        * (-1.13520398
                                                            + t
                                                                * (1.48851587
                                                                    + t
                                                                        * (-0.82215223
                                                                            + t
                                                                                * 0.17087277))))))));
    return t * StrictMath.exp(poly);
  }

  /** Exact GELU; for negative x through erfc, which keeps the far tail's relative accuracy. */
  static float geluErf(float x) {
    double z = x * 0.7071067811865476;
    return (float) (z < -0.5 ? 0.5 * x * erfc(-z) : 0.5 * x * (1 + erf((float) z)));
  }

  /**
   * Tanh-approximated GELU, using {@code (1 + tanh u) / 2 = sigmoid(2u)}, which does not cancel.
   */
  static float geluTanh(float x) {
    double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return (float) (x / (1 + StrictMath.exp(-2 * u)));
  }

  static float sigmoid(float x) {
    return (float) (1 / (1 + StrictMath.exp(-x)));
  }

  static float silu(float x) {
    return x * sigmoid(x);
  }
}
