package dev.stepweave.tensor.cpu;

/** Scalar special functions the JDK lacks, accurate to float precision. */
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
    double erfc = t * Math.exp(poly);
    return (float) (x >= 0 ? 1 - erfc : erfc - 1);
  }

  static float geluErf(float x) {
    return 0.5f * x * (1f + erf(x * 0.70710678f));
  }

  static float geluTanh(float x) {
    float inner = 0.7978845608f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1f + (float) Math.tanh(inner));
  }

  static float sigmoid(float x) {
    return (float) (1 / (1 + Math.exp(-x)));
  }

  static float silu(float x) {
    return x * sigmoid(x);
  }
}
