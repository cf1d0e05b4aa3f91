package dev.stepweave.training.autograd;

/**
 * erf in double precision (Java has none): the Maclaurin series where it converges quickly, the
 * continued fraction of erfc beyond. Accurate to about 1e-14, far below float rounding, which is
 * all the exact GELU's derivative needs.
 */
final class ErrorFunction {
  private static final double TWO_OVER_SQRT_PI = 2.0 / Math.sqrt(Math.PI);

  private ErrorFunction() {}

  static double erf(double x) {
    double ax = Math.abs(x);
    if (ax > 6) {
      return Math.signum(x);
    }
    double r = ax < 2.5 ? series(ax) : 1 - erfcContinuedFraction(ax);
    return x < 0 ? -r : r;
  }

  private static double series(double x) {
    double term = x;
    double sum = x;
    double x2 = x * x;
    for (int n = 1; n < 200; n++) {
      term *= -x2 / n;
      double add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) {
        break;
      }
    }
    return TWO_OVER_SQRT_PI * sum;
  }

  /** erfc(x) = exp(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))) for x ≥ 2.5. */
  private static double erfcContinuedFraction(double x) {
    double f = x;
    for (int n = 60; n >= 1; n--) {
      f = x + (n / 2.0) / f;
    }
    return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
  }
}
