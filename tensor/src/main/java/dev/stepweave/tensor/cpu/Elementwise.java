package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/** Elementwise maps and NumPy-broadcast binary operations. */
final class Elementwise {
  private static final long GRAIN = 1 << 14;

  private final WorkPool pool;

  Elementwise(WorkPool pool) {
    this.pool = pool;
  }

  /** A float-to-float function applied to every element. */
  @FunctionalInterface
  interface FloatMap {
    float apply(float x);
  }

  Tensor map(Tensor x, FloatMap f) {
    MemorySegment in = Dense.segment(x);
    Tensor out = Dense.output(x.shape());
    MemorySegment o = out.segment();
    pool.forRange(
        x.numel(),
        GRAIN,
        (s, e) -> {
          for (long i = s; i < e; i++) {
            Dense.set(o, i, f.apply(Dense.get(in, i)));
          }
        });
    return out;
  }

  Tensor unary(Tensor x, UnaryOp op) {
    return map(x, unaryFunction(op));
  }

  static FloatMap unaryFunction(UnaryOp op) {
    return switch (op) {
      case NEG -> v -> -v;
      case EXP -> v -> (float) StrictMath.exp(v);
      case TANH -> v -> (float) StrictMath.tanh(v);
      case SQRT -> v -> (float) Math.sqrt(v);
      case RSQRT -> v -> 1f / (float) Math.sqrt(v);
      case SIN -> v -> (float) StrictMath.sin(v);
      case COS -> v -> (float) StrictMath.cos(v);
      case RELU -> v -> v > 0 ? v : 0f;
      case SIGMOID -> ScalarMath::sigmoid;
      case ABS -> Math::abs;
      case SQUARE -> v -> v * v;
    };
  }

  static float apply(BinaryOp op, float a, float b) {
    return switch (op) {
      case ADD -> a + b;
      case SUB -> a - b;
      case MUL -> a * b;
      case DIV -> a / b;
      case MAX -> Math.max(a, b);
      case MIN -> Math.min(a, b);
    };
  }

  Tensor binary(Tensor a, Tensor b, BinaryOp op) {
    int[] shape = OpShapes.broadcast(a.shape(), b.shape());
    Tensor av = Dense.f32(a).expand(shape);
    Tensor bv = Dense.f32(b).expand(shape);
    Tensor out = Dense.output(shape);
    MemorySegment as = av.storage().segment();
    MemorySegment bs = bv.storage().segment();
    MemorySegment o = out.segment();
    int rank = shape.length;
    int inner = rank == 0 ? 1 : shape[rank - 1];
    long rows = inner == 0 ? 0 : out.numel() / inner;
    long sa = rank == 0 ? 0 : av.stride(-1);
    long sb = rank == 0 ? 0 : bv.stride(-1);
    pool.forRange(
        rows,
        Math.max(1, GRAIN / Math.max(1, inner)),
        (r0, r1) -> {
          // Row by row through heap buffers: bulk copies in and out, and one tight loop per
          // operation, instead of a bounds- and liveness-checked segment access per element.
          float[] x = new float[inner];
          float[] y = new float[inner];
          float[] z = new float[inner];
          for (long r = r0; r < r1; r++) {
            readRow(as, rowOffset(av, shape, r), sa, x);
            readRow(bs, rowOffset(bv, shape, r), sb, y);
            applyRow(op, x, y, z);
            MemorySegment.copy(z, 0, o, ValueLayout.JAVA_FLOAT_UNALIGNED, r * inner * 4L, inner);
          }
        });
    return out;
  }

  /** The {@code row.length} elements from storage index {@code start}, {@code stride} apart. */
  private static void readRow(MemorySegment s, long start, long stride, float[] row) {
    if (stride == 1) {
      MemorySegment.copy(s, ValueLayout.JAVA_FLOAT_UNALIGNED, start * 4L, row, 0, row.length);
    } else if (stride == 0) {
      Arrays.fill(row, Dense.get(s, start));
    } else {
      for (int i = 0; i < row.length; i++) {
        row[i] = Dense.get(s, start + i * stride);
      }
    }
  }

  private static void applyRow(BinaryOp op, float[] x, float[] y, float[] z) {
    int n = z.length;
    switch (op) {
      case ADD -> {
        for (int i = 0; i < n; i++) {
          z[i] = x[i] + y[i];
        }
      }
      case SUB -> {
        for (int i = 0; i < n; i++) {
          z[i] = x[i] - y[i];
        }
      }
      case MUL -> {
        for (int i = 0; i < n; i++) {
          z[i] = x[i] * y[i];
        }
      }
      case DIV -> {
        for (int i = 0; i < n; i++) {
          z[i] = x[i] / y[i];
        }
      }
      case MAX -> {
        for (int i = 0; i < n; i++) {
          z[i] = Math.max(x[i], y[i]);
        }
      }
      case MIN -> {
        for (int i = 0; i < n; i++) {
          z[i] = Math.min(x[i], y[i]);
        }
      }
    }
  }

  /** Storage index of the first element of innermost row {@code row} of view {@code t}. */
  static long rowOffset(Tensor t, int[] shape, long row) {
    long off = t.offset();
    for (int d = shape.length - 2; d >= 0; d--) {
      off += (row % shape[d]) * t.stride(d);
      row /= shape[d];
    }
    return off;
  }
}
