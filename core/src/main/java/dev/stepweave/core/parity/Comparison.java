package dev.stepweave.core.parity;

import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * One output or tap compared against its recording.
 *
 * @param name the recording's tensor name (prefixed with the recording file when reported)
 * @param shape the expected shape
 * @param maxAbsError max |actual − expected|; NaN when shapes differ or values are non-finite
 * @param relativeL2Error ‖actual − expected‖ / ‖expected‖
 * @param problem why the comparison failed outright (shape mismatch, non-finite values), or null
 */
public record Comparison(
    String name,
    int[] shape,
    double maxAbsError,
    double relativeL2Error,
    Tolerance tolerance,
    String problem) {

  public boolean passed() {
    return problem == null && tolerance.accepts(maxAbsError, relativeL2Error);
  }

  /** Compares two CPU tensors elementwise in double precision. */
  public static Comparison of(String name, Tensor actual, Tensor expected, Tolerance tolerance) {
    int[] shape = expected.shape();
    if (!Arrays.equals(actual.shape(), shape)) {
      return new Comparison(
          name,
          shape,
          Double.NaN,
          Double.NaN,
          tolerance,
          "shape " + Arrays.toString(actual.shape()) + " != expected " + Arrays.toString(shape));
    }
    float[] a = actual.toFloatArray();
    float[] e = expected.toFloatArray();
    double maxAbs = 0;
    double diff2 = 0;
    double ref2 = 0;
    long nonFinite = 0;
    for (int i = 0; i < a.length; i++) {
      if (!Float.isFinite(a[i])) {
        nonFinite++;
        continue;
      }
      double d = (double) a[i] - e[i];
      maxAbs = Math.max(maxAbs, Math.abs(d));
      diff2 += d * d;
      ref2 += (double) e[i] * e[i];
    }
    double rel = ref2 == 0 ? (diff2 == 0 ? 0 : Double.POSITIVE_INFINITY) : Math.sqrt(diff2 / ref2);
    String problem = nonFinite > 0 ? nonFinite + " non-finite values" : null;
    return new Comparison(name, shape, maxAbs, rel, tolerance, problem);
  }

  /** One report line: name, shape, errors, verdict. */
  public String line() {
    String verdict = passed() ? "PASS" : "FAIL";
    String detail = problem != null ? "  (" + problem + ")" : "";
    return String.format(
        Locale.ROOT,
        "%-4s %-44s %-22s max_abs=%.3e rel_l2=%.3e  [%s]%s",
        verdict,
        name,
        Arrays.toString(shape).replace(" ", ""),
        maxAbsError,
        relativeL2Error,
        tolerance,
        detail);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Comparison c
        && name.equals(c.name)
        && Arrays.equals(shape, c.shape)
        && Double.compare(maxAbsError, c.maxAbsError) == 0
        && Double.compare(relativeL2Error, c.relativeL2Error) == 0
        && tolerance.equals(c.tolerance)
        && java.util.Objects.equals(problem, c.problem);
  }

  @Override
  public int hashCode() {
    return 31 * name.hashCode() + Arrays.hashCode(shape);
  }

  @Override
  public String toString() {
    return line();
  }
}
