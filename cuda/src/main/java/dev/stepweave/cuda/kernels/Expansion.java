package dev.stepweave.cuda.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * A view expanded along some dimensions (stride 0 there, size above 1) — a nearest upsampling, a
 * repeat — split for the expanded kernels ({@code copy_expanded_*}, {@code binary_expanded_*}): the
 * view's own dimensions, over which each thread takes one value, and the offsets in the destination
 * of that value's replicas (the kernels' {@code struct Replicas64}, the innermost replica dimension
 * fastest). The generic kernels spend a whole element's index arithmetic on every replica; these
 * spend one value's on all of them.
 */
public final class Expansion {
  /** The most replicas of one value the kernels' parameter holds. */
  public static final int MAX_REPLICAS = 64;

  private final int[] ownShape;
  private final long[] ownStrides;
  private final long[] ownDestinationStrides;
  private final long[] replicaOffsets;

  private Expansion(int[] ownShape, long[] ownStrides, long[] ownDestination, long[] replicas) {
    this.ownShape = ownShape;
    this.ownStrides = ownStrides;
    this.ownDestinationStrides = ownDestination;
    this.replicaOffsets = replicas;
  }

  /**
   * The split of a view of {@code shape} with {@code strides} written through {@code destination}
   * strides, or null when the view repeats no value, or a value more than {@link #MAX_REPLICAS}
   * times (a broadcast over whole rows, which other kernels serve).
   */
  public static Expansion of(int[] shape, long[] strides, long[] destination) {
    int rank = shape.length;
    int own = 0;
    long replicas = 1;
    for (int d = 0; d < rank; d++) {
      if (shape[d] > 1 && strides[d] == 0) {
        replicas *= shape[d];
        if (replicas > MAX_REPLICAS) {
          return null;
        }
      } else {
        own++;
      }
    }
    if (replicas < 2) {
      return null;
    }
    int[] ownShape = new int[own];
    long[] ownStrides = new long[own];
    long[] ownDestination = new long[own];
    int[] replicaShape = new int[rank - own];
    long[] replicaDestination = new long[rank - own];
    int o = 0;
    int r = 0;
    for (int d = 0; d < rank; d++) {
      if (shape[d] > 1 && strides[d] == 0) {
        replicaShape[r] = shape[d];
        replicaDestination[r++] = destination[d];
      } else {
        ownShape[o] = shape[d];
        ownStrides[o] = strides[d];
        ownDestination[o++] = destination[d];
      }
    }
    // Every replica's offset, counting through the replica dims like an odometer.
    long[] offsets = new long[(int) replicas];
    int[] digit = new int[replicaShape.length];
    for (int i = 1; i < offsets.length; i++) {
      int d = replicaShape.length - 1;
      while (++digit[d] == replicaShape[d]) {
        digit[d--] = 0;
      }
      long offset = 0;
      for (int k = 0; k < digit.length; k++) {
        offset += digit[k] * replicaDestination[k];
      }
      offsets[i] = offset;
    }
    return new Expansion(ownShape, ownStrides, ownDestination, offsets);
  }

  /** How many values the view holds: one thread's work each. */
  public long values() {
    long n = 1;
    for (int s : ownShape) {
      n *= s;
    }
    return n;
  }

  /** How many replicas each value has. */
  public int replicas() {
    return replicaOffsets.length;
  }

  /** The own dims as a kernel {@code Index8}: the view's strides, then the destination's. */
  public MemorySegment own(Arena arena) {
    return Index8.of(arena, ownShape, ownStrides, ownDestinationStrides);
  }

  /** The replicas' destination offsets as the kernels' {@code struct Replicas64}. */
  public MemorySegment replicaOffsets(Arena arena) {
    MemorySegment seg = arena.allocate((long) MAX_REPLICAS * Long.BYTES, 8);
    for (int i = 0; i < replicaOffsets.length; i++) {
      seg.setAtIndex(ValueLayout.JAVA_LONG, i, replicaOffsets[i]);
    }
    return seg;
  }

  @Override
  public String toString() {
    return "Expansion[own " + Arrays.toString(ownShape) + ", " + replicas() + " replicas]";
  }
}
