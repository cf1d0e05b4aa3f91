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

  /** Depth chunk of the contiguous-line path: a chunk of the output group stays in L1. */
  private static final int CHUNK = 256;

  /**
   * Each line is contiguous: bulk-copy a chunk of it, then scatter that into its lane, chunk by
   * chunk so the strided writes stay within L1.
   */
  private static void packContiguousLines(
      Lines src, int first, int count, int depth, int width, float[] packed, int base) {
    float[] chunk = new float[Math.min(CHUNK, depth)];
    for (int q0 = 0; q0 < depth; q0 += CHUNK) {
      int len = Math.min(CHUNK, depth - q0);
      for (int i = 0; i < count; i++) {
        long start = (src.offset() + (first + i) * src.lineStride() + q0) * Float.BYTES;
        MemorySegment.copy(src.segment(), Dense.FLOAT, start, chunk, 0, len);
        int to = base + q0 * width + i;
        for (int q = 0; q < len; q++) {
          packed[to + q * width] = chunk[q];
        }
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
