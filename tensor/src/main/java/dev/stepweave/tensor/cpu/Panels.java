package dev.stepweave.tensor.cpu;

import java.lang.foreign.MemorySegment;

/**
 * Packs a GEMM operand into the micro-kernel's layout: groups of {@code width} lines (rows of A, or
 * columns of B) interleaved along the depth k, {@code [group][k][width]}, with the last group
 * zero-padded to full width so the kernel never needs an edge case.
 */
final class Panels {
  private Panels() {}

  /**
   * {@code lines} lines of {@code depth} elements: element {@code (i, q)} is at index {@code offset
   * + i * lineStride + q * depthStride}.
   */
  record Lines(MemorySegment segment, long offset, long lineStride, long depthStride) {}

  static float[] pack(WorkPool pool, Lines src, int lines, int depth, int width) {
    int groups = (lines + width - 1) / width;
    float[] packed = new float[Math.multiplyExact(groups * width, Math.max(depth, 1))];
    pool.run(
        groups,
        g -> {
          int first = g * width;
          int count = Math.min(width, lines - first);
          int base = g * width * depth;
          if (src.depthStride() == 1) {
            packContiguousLines(src, first, count, depth, width, packed, base);
          } else {
            packStrided(src, first, count, depth, width, packed, base);
          }
        });
    return packed;
  }

  /** Each line is contiguous: bulk-copy it once, then scatter it into its lane. */
  private static void packContiguousLines(
      Lines src, int first, int count, int depth, int width, float[] packed, int base) {
    float[] line = new float[depth];
    for (int i = 0; i < count; i++) {
      long start = (src.offset() + (first + i) * src.lineStride()) * Float.BYTES;
      MemorySegment.copy(src.segment(), Dense.FLOAT, start, line, 0, depth);
      for (int q = 0; q < depth; q++) {
        packed[base + q * width + i] = line[q];
      }
    }
  }

  private static void packStrided(
      Lines src, int first, int count, int depth, int width, float[] packed, int base) {
    MemorySegment s = src.segment();
    for (int q = 0; q < depth; q++) {
      long at = src.offset() + first * src.lineStride() + q * src.depthStride();
      int to = base + q * width;
      if (src.lineStride() == 1) {
        MemorySegment.copy(s, Dense.FLOAT, at * Float.BYTES, packed, to, count);
        continue;
      }
      for (int i = 0; i < count; i++) {
        packed[to + i] = Dense.get(s, at + i * src.lineStride());
      }
    }
  }
}
