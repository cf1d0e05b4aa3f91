package dev.stepweave.cuda.ops;

import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * F32 vectors broadcast over the rows of an {@code [..., n]} tensor (modulation vectors {@code [B,
 * 1, n]} over {@code [B, L, n]}): row r reads {@code data + (r / rowsPerGroup) · groupStride}.
 */
record RowVectors(List<Tensor> data, long groupStride, long rowsPerGroup) {
  /** Releases the copies made of {@code originals} (nothing for views of them). */
  void release(DeviceTensors tensors, Tensor... originals) {
    for (int i = 0; i < originals.length; i++) {
      tensors.releaseDerived(data.get(i), originals[i]);
    }
  }

  /**
   * {@code vectors} over {@code shape}: views of them when they all follow one (groupStride,
   * rowsPerGroup) pattern, else dense F32 copies of their broadcasts.
   */
  static RowVectors of(DeviceTensors tensors, int[] shape, Tensor... vectors) {
    List<Tensor> views = new ArrayList<>();
    long[] pattern = null;
    boolean shared = true;
    for (Tensor v : vectors) {
      Tensor e;
      try {
        e = tensors.f32View(v).expand(shape);
      } catch (IllegalArgumentException ex) {
        throw new IllegalArgumentException(
            "vector " + v + " does not broadcast to " + Arrays.toString(shape));
      }
      views.add(e);
      long[] p = rowPattern(e);
      shared &= p != null && (pattern == null || Arrays.equals(p, pattern));
      pattern = pattern == null ? p : pattern;
    }
    if (shared) {
      return new RowVectors(views, pattern[0], pattern[1]);
    }
    List<Tensor> dense = new ArrayList<>();
    for (Tensor e : views) {
      dense.add(tensors.convert(e, DType.F32));
    }
    return new RowVectors(dense, shape[shape.length - 1], 1);
  }

  /**
   * {groupStride, rowsPerGroup} of a view broadcast to its shape {@code [..., n]}: the row dims are
   * dense groups (outer) times broadcast rows (inner, stride 0); null for any other layout.
   */
  private static long[] rowPattern(Tensor e) {
    int last = e.rank() - 1;
    if (last < 0 || (e.dim(last) > 1 && e.stride(last) != 1)) {
      return null;
    }
    int k = last;
    long rowsPerGroup = 1;
    while (k > 0 && (e.stride(k - 1) == 0 || e.dim(k - 1) == 1)) {
      rowsPerGroup *= e.dim(k - 1);
      k--;
    }
    long groupStride = k == 0 ? 0 : e.stride(k - 1);
    long expected = k == 0 ? 0 : groupStride * e.dim(k - 1);
    for (int i = k - 2; i >= 0; i--) {
      if (e.dim(i) != 1 && e.stride(i) != expected) {
        return null;
      }
      expected *= e.dim(i);
    }
    return new long[] {groupStride, Math.max(rowsPerGroup, 1)};
  }
}
