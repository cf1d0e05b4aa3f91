package dev.stepweave.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The split of an expanded view for the expanded kernels: one thread per value of the view, the
 * replicas' destination offsets innermost-fastest, and no split where the view repeats nothing or a
 * value more than the kernels' 64 replicas.
 */
class ExpansionTest {

  @Test
  void aNearestUpsampledViewSplitsIntoItsValuesAndTheirReplicas() {
    // x [3, 4, 5] upsampled 2× in both spatial dims: [3, 4, 2, 5, 2], written into dense [3, 8,
    // 10].
    Expansion e =
        Expansion.of(
            new int[] {3, 4, 2, 5, 2}, new long[] {20, 5, 0, 1, 0}, new long[] {80, 20, 10, 2, 1});
    assertEquals(60, e.values());
    assertEquals(4, e.replicas());
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment replicas = e.replicaOffsets(arena);
      long[] offsets = new long[4];
      for (int i = 0; i < 4; i++) {
        offsets[i] = replicas.getAtIndex(ValueLayout.JAVA_LONG, i);
      }
      // (row repeat, column repeat) = (0,0), (0,1), (1,0), (1,1).
      assertEquals(0, offsets[0]);
      assertEquals(1, offsets[1]);
      assertEquals(10, offsets[2]);
      assertEquals(11, offsets[3]);
      MemorySegment own = e.own(arena);
      // Own dims [3, 4, 5]: the first two continue each other in both layouts, so [12, 5].
      assertEquals(2, own.get(ValueLayout.JAVA_INT, 256));
      assertEquals(12, own.getAtIndex(ValueLayout.JAVA_LONG, 0));
      assertEquals(5, own.getAtIndex(ValueLayout.JAVA_LONG, 8), "the view's stride of dim 0");
      assertEquals(20, own.getAtIndex(ValueLayout.JAVA_LONG, 16), "the destination's of dim 0");
      assertEquals(2, own.getAtIndex(ValueLayout.JAVA_LONG, 17), "the destination's of dim 1");
    }
  }

  @Test
  void aViewThatRepeatsNothingOrTooMuchIsNotSplit() {
    assertNull(Expansion.of(new int[] {2, 3}, new long[] {3, 1}, new long[] {3, 1}));
    assertNull(
        Expansion.of(new int[] {1, 3}, new long[] {0, 1}, new long[] {3, 1}), "a unit dim only");
    assertNull(
        Expansion.of(new int[] {65, 3}, new long[] {0, 1}, new long[] {3, 1}), "65 replicas");
    assertEquals(
        64, Expansion.of(new int[] {64, 3}, new long[] {0, 1}, new long[] {3, 1}).replicas());
  }
}
