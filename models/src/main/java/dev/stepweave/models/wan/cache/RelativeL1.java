package dev.stepweave.models.wan.cache;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/** The similarity signal of the caches: mean |a − b| / mean |b|, on the device. */
final class RelativeL1 {
  private RelativeL1() {}

  /** Infinite when {@code b} is all zeros (nothing to compare against: never similar). */
  static double of(Backend ops, Tensor a, Tensor b) {
    double num = sumAbs(ops, ops.sub(a, b));
    double den = sumAbs(ops, b);
    return den == 0 ? Double.POSITIVE_INFINITY : num / den;
  }

  /**
   * Σ|t| in two row reductions: per row of the last dimension, then over the row sums. One
   * reduction over all elements would be a single row, which a device reduces with one thread block
   * — tens of milliseconds for a video's hidden states.
   */
  private static double sumAbs(Backend ops, Tensor t) {
    Tensor abs = ops.contiguous(ops.unary(t, Backend.UnaryOp.ABS));
    int last = abs.rank() == 0 ? 1 : abs.dim(-1);
    Tensor rows = ops.sumLastDim(abs.reshape((int) (abs.numel() / last), last));
    Tensor sum = ops.sumLastDim(rows.reshape(1, (int) rows.numel()));
    return ops.download(sum).toFloatArray()[0];
  }
}
