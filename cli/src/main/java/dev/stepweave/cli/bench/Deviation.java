package dev.stepweave.cli.bench;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * How far a request's pixels in one run are from its pixels served one at a time.
 *
 * @param bitIdentical every value the same, bit for bit
 * @param relativeL2 ‖pixels − reference‖₂ / ‖reference‖₂; NaN when the shapes differ or a value is
 *     not finite (so no bound accepts it)
 */
public record Deviation(boolean bitIdentical, double relativeL2) {
  /** The reference itself. */
  public static final Deviation NONE = new Deviation(true, 0);

  public static Deviation between(Tensor pixels, Tensor reference) {
    Comparison c = Comparison.of("pixels", pixels, reference, OutputCheck.DEVICE_BOUND);
    double rel = c.problem() == null ? c.relativeL2Error() : Double.NaN;
    boolean same =
        c.problem() == null && Arrays.equals(pixels.toFloatArray(), reference.toFloatArray());
    return new Deviation(same, rel);
  }
}
