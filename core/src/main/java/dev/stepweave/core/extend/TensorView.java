package dev.stepweave.core.extend;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.function.UnaryOperator;

/**
 * A read-only look at a tensor: its shape and a copy of its values. Observers get these, never the
 * tensor, so they cannot change what the loop computes.
 */
public final class TensorView {
  private final Tensor tensor;
  private final UnaryOperator<Tensor> toHost;

  public TensorView(Tensor tensor, UnaryOperator<Tensor> toHost) {
    this.tensor = tensor;
    this.toHost = toHost;
  }

  public int[] shape() {
    return tensor.shape();
  }

  public DType dtype() {
    return tensor.dtype();
  }

  /** A copy of the values as F32, row-major. */
  public float[] values() {
    return toHost.apply(tensor).toFloatArray();
  }

  /** A contiguous F32 host copy. */
  public Tensor copy() {
    return toHost.apply(tensor).toHost(DType.F32);
  }
}
