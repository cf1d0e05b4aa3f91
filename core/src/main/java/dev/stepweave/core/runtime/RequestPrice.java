package dev.stepweave.core.runtime;

/**
 * A request's predicted cost on its pool, from the cost model at submit.
 *
 * @param requestSeconds predicted device seconds of the whole request (every step of every loop:
 *     text encoding, denoising and decoding)
 * @param largestStepSeconds predicted device seconds of its largest single step
 * @param largestStepLoop the loop of that step
 * @param calibrated whether measurements raised a static figure (they never lower one)
 */
public record RequestPrice(
    double requestSeconds, double largestStepSeconds, String largestStepLoop, boolean calibrated) {

  /** "largest step 270 s (loop denoise), 275 s in all". */
  public String describe() {
    return "largest step "
        + seconds(largestStepSeconds)
        + " (loop "
        + largestStepLoop
        + "), "
        + seconds(requestSeconds)
        + " in all";
  }

  /** Three significant digits and the unit: "270 s", "1.50 s", "0.0200 s". */
  static String seconds(double s) {
    return (Double.isInfinite(s)
            ? "unlimited"
            : new java.math.BigDecimal(s)
                .round(new java.math.MathContext(3))
                .stripTrailingZeros()
                .toPlainString())
        + " s";
  }
}
