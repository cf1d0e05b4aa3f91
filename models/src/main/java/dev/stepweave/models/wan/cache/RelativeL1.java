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

  private static double sumAbs(Backend ops, Tensor t) {
    Tensor abs = ops.contiguous(ops.unary(t, Backend.UnaryOp.ABS));
    Tensor sum = ops.sumLastDim(abs.reshape(1, (int) abs.numel()));
    return ops.download(sum).toFloatArray()[0];
  }
}
