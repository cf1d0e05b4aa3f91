package dev.stepweave.cuda;

import dev.stepweave.tensor.Tensor;

/** The bf16 mode's accuracy measure: ‖actual − expected‖₂ / ‖expected‖₂ over host tensors. */
public final class RelativeL2 {
  private RelativeL2() {}

  public static double of(Tensor actual, Tensor expected) {
    float[] a = actual.toFloatArray(), e = expected.toFloatArray();
    if (a.length != e.length) {
      throw new IllegalArgumentException("comparing " + actual + " with " + expected);
    }
    double diff = 0, norm = 0;
    for (int i = 0; i < a.length; i++) {
      diff += (a[i] - (double) e[i]) * (a[i] - (double) e[i]);
      norm += (double) e[i] * e[i];
    }
    return Math.sqrt(diff / norm);
  }
}
