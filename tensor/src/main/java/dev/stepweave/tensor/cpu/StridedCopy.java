package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Copies any strided view into a fresh contiguous tensor, converting the dtype. Walks the view one
 * innermost row at a time so the per-element cost is a load and a store, not an index division.
 */
final class StridedCopy {
  private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;

  private StridedCopy() {}

  static Tensor toContiguous(Tensor t, DType target) {
    Dense.requireHost(t);
    if (target != DType.F32 || !t.dtype().isFloating()) {
      return t.toHost(target);
    }
    int[] shape = t.shape();
    Tensor out = Tensor.zeros(DType.F32, shape);
    long n = t.numel();
    if (n == 0) {
      return out;
    }
    MemorySegment src = t.storage().segment();
    MemorySegment dst = out.segment();
    int rank = shape.length;
    int inner = rank == 0 ? 1 : shape[rank - 1];
    long innerStride = rank == 0 ? 0 : t.stride(-1);
    long[] strides = t.strides();
    int[] index = new int[Math.max(rank - 1, 0)];
    long base = t.offset();
    DType from = t.dtype();
    for (long row = 0, d = 0; row < n / inner; row++, d += inner) {
      copyRow(from, src, base, innerStride, dst, d, inner);
      for (int a = rank - 2; a >= 0; a--) {
        base += strides[a];
        if (++index[a] < shape[a]) {
          break;
        }
        base -= strides[a] * shape[a];
        index[a] = 0;
      }
    }
    return out;
  }

  private static void copyRow(
      DType from, MemorySegment src, long s, long stride, MemorySegment dst, long d, int n) {
    switch (from) {
      case F32 -> {
        if (stride == 1) {
          MemorySegment.copy(src, s * 4, dst, d * 4, n * 4L);
        } else {
          for (int i = 0; i < n; i++) {
            Dense.set(dst, d + i, src.getAtIndex(Dense.FLOAT, s + i * stride));
          }
        }
      }
      case BF16 -> {
        for (int i = 0; i < n; i++) {
          Dense.set(dst, d + i, DType.bf16ToFloat(src.getAtIndex(SHORT, s + i * stride)));
        }
      }
      case F16 -> {
        for (int i = 0; i < n; i++) {
          Dense.set(dst, d + i, Float.float16ToFloat(src.getAtIndex(SHORT, s + i * stride)));
        }
      }
      case F64 -> {
        for (int i = 0; i < n; i++) {
          Dense.set(
              dst,
              d + i,
              (float) src.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, s + i * stride));
        }
      }
      default -> throw new IllegalArgumentException("not a floating dtype: " + from);
    }
  }
}
