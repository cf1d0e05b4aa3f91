package dev.stepweave.cuda.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * The kernels' {@code struct Index8}: a shape of up to eight dimensions and up to three stride sets
 * over it. Dimensions of size 1 are dropped and neighbours that are contiguous in every stride set
 * are merged first, so most views need far fewer than eight.
 */
public final class Index8 {
  static final int MAX_RANK = 8;
  private static final long BYTES = 4 * MAX_RANK * 8 + 8;

  private Index8() {}

  /** The struct for {@code shape} under {@code strides} (one to three sets), as kernel bytes. */
  public static MemorySegment of(Arena arena, int[] shape, long[]... strides) {
    int[] dims = new int[shape.length];
    long[][] s = new long[strides.length][shape.length];
    int rank = 0;
    for (int d = 0; d < shape.length; d++) {
      if (shape[d] == 1) {
        continue;
      }
      if (rank > 0 && mergeable(s, strides, rank - 1, d, shape[d])) {
        dims[rank - 1] *= shape[d];
        for (int k = 0; k < strides.length; k++) {
          s[k][rank - 1] = strides[k][d];
        }
        continue;
      }
      dims[rank] = shape[d];
      for (int k = 0; k < strides.length; k++) {
        s[k][rank] = strides[k][d];
      }
      rank++;
    }
    if (rank > MAX_RANK) {
      throw new IllegalArgumentException(
          "view of shape " + Arrays.toString(shape) + " needs more than 8 dimensions on the GPU");
    }
    MemorySegment seg = arena.allocate(BYTES, 8);
    for (int d = 0; d < rank; d++) {
      seg.setAtIndex(ValueLayout.JAVA_LONG, d, dims[d]);
      for (int k = 0; k < strides.length; k++) {
        seg.setAtIndex(ValueLayout.JAVA_LONG, (long) (k + 1) * MAX_RANK + d, s[k][d]);
      }
    }
    seg.set(ValueLayout.JAVA_INT, 4L * MAX_RANK * 8, rank);
    return seg;
  }

  /** Whether dimension {@code d} (size n) continues the kept dimension {@code prev} in all sets. */
  private static boolean mergeable(long[][] kept, long[][] strides, int prev, int d, int n) {
    for (int k = 0; k < strides.length; k++) {
      if (kept[k][prev] != strides[k][d] * n) {
        return false;
      }
    }
    return true;
  }
}
