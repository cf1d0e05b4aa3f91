package dev.stepweave.core.parity;

/** How close an output must be to its reference recording. */
public sealed interface Tolerance {

  /** The bound this tolerance puts on its metric. */
  double bound();

  /** Whether a measured comparison is within the bound. */
  boolean accepts(double maxAbsError, double relativeL2Error);

  /** Max |actual − expected| over all elements ≤ bound (float32 references on CPU). */
  record MaxAbs(double bound) implements Tolerance {
    @Override
    public boolean accepts(double maxAbsError, double relativeL2Error) {
      return maxAbsError <= bound;
    }

    @Override
    public String toString() {
      return "max_abs<=" + bound;
    }
  }

  /** ‖actual − expected‖₂ / ‖expected‖₂ ≤ bound (reduced-precision runs against F32 references). */
  record RelativeL2(double bound) implements Tolerance {
    @Override
    public boolean accepts(double maxAbsError, double relativeL2Error) {
      return relativeL2Error <= bound;
    }

    @Override
    public String toString() {
      return "rel_l2<=" + bound;
    }
  }
}
