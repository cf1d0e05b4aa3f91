package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Brings inputs into the one layout the kernels read: contiguous F32 host memory. */
final class Dense {
  static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

  private Dense() {}

  /** {@code t} itself when it is contiguous F32 on the host, otherwise a contiguous F32 copy. */
  static Tensor f32(Tensor t) {
    requireHost(t);
    if (t.dtype() == DType.F32 && t.isContiguous()) {
      return t;
    }
    return StridedCopy.toContiguous(t, DType.F32);
  }

  /**
   * {@code t} itself when it is F32 on the host, whatever its strides (for a kernel that reads
   * through them, as the GEMM's panel packing does), otherwise a contiguous F32 copy.
   */
  static Tensor f32Strided(Tensor t) {
    requireHost(t);
    return t.dtype() == DType.F32 ? t : StridedCopy.toContiguous(t, DType.F32);
  }

  /** The contiguous F32 elements of {@code t}, copying when needed. */
  static MemorySegment segment(Tensor t) {
    return f32(t).segment();
  }

  static void requireHost(Tensor t) {
    if (t.device().kind() != Device.Kind.CPU) {
      throw new IllegalArgumentException("the CPU backend cannot read a tensor on " + t.device());
    }
  }

  static Tensor output(int... shape) {
    return Tensor.zeros(DType.F32, shape);
  }

  static float get(MemorySegment s, long index) {
    return s.getAtIndex(FLOAT, index);
  }

  static void set(MemorySegment s, long index, float v) {
    s.setAtIndex(FLOAT, index, v);
  }
}
