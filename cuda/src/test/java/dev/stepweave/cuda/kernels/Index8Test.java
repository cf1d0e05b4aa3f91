package dev.stepweave.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The kernels' index struct: unit dims dropped, contiguous runs merged, layout as in C. */
class Index8Test {

  @Test
  void contiguousViewsCollapseToOneDimension() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s =
          Index8.of(arena, new int[] {2, 3, 4}, new long[] {12, 4, 1}, new long[] {12, 4, 1});
      assertEquals(1, s.get(ValueLayout.JAVA_INT, 256));
      assertEquals(24, s.getAtIndex(ValueLayout.JAVA_LONG, 0));
      assertEquals(1, s.getAtIndex(ValueLayout.JAVA_LONG, 8));
    }
  }

  @Test
  void aTransposeKeepsItsDimensionsAndBroadcastKeepsStrideZero() {
    try (Arena arena = Arena.ofConfined()) {
      // [3, 1, 4] read transposed (strides 1, -, 3) into contiguous [3, 4]; a broadcast row.
      MemorySegment s =
          Index8.of(
              arena,
              new int[] {3, 1, 4},
              new long[] {1, 99, 3},
              new long[] {4, 4, 1},
              new long[] {0, 0, 1});
      assertEquals(2, s.get(ValueLayout.JAVA_INT, 256));
      assertArrayEquals(new long[] {3, 4}, longs(s, 0));
      assertArrayEquals(new long[] {1, 3}, longs(s, 8));
      assertArrayEquals(new long[] {4, 1}, longs(s, 16));
      assertArrayEquals(new long[] {0, 1}, longs(s, 24));
    }
  }

  private static long[] longs(MemorySegment s, int from) {
    return new long[] {
      s.getAtIndex(ValueLayout.JAVA_LONG, from), s.getAtIndex(ValueLayout.JAVA_LONG, from + 1)
    };
  }
}
