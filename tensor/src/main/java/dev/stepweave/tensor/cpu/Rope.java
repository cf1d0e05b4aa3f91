package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;

/** Rotary position embedding over interleaved pairs of the last dimension. */
final class Rope {
  private static final long GRAIN = 1 << 14;

  private final WorkPool pool;

  Rope(WorkPool pool) {
    this.pool = pool;
  }

  Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    OpShapes.rope(x, cos, sin);
    int b = x.dim(0), l = x.dim(1), h = x.dim(2), half = x.dim(3) / 2;
    MemorySegment xs = Dense.segment(x);
    MemorySegment cs = Dense.segment(cos);
    MemorySegment ss = Dense.segment(sin);
    Tensor out = Dense.output(x.shape());
    MemorySegment o = out.segment();
    pool.forRange(
        (long) b * l * h,
        Math.max(1, GRAIN / (2L * Math.max(1, half))),
        (r0, r1) -> {
          for (long r = r0; r < r1; r++) {
            long pos = (r / h) % l;
            long base = r * 2 * half;
            for (int i = 0; i < half; i++) {
              float c = Dense.get(cs, pos * half + i);
              float s = Dense.get(ss, pos * half + i);
              float re = Dense.get(xs, base + 2 * i);
              float im = Dense.get(xs, base + 2 * i + 1);
              Dense.set(o, base + 2 * i, re * c - im * s);
              Dense.set(o, base + 2 * i + 1, re * s + im * c);
            }
          }
        });
    return out;
  }
}
