package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;

import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * An optimiser's passes over every trainable tensor in a few launches instead of one (or three) per
 * tensor: AdamW with a clipping's coefficient folded in, and the sums of squares of a global
 * gradient norm. A 1.3B DiT has 825 tensors, so per-tensor launches cost the host thousands of
 * calls a step for memory-bound work the device does in milliseconds. Each launch takes a table of
 * up to {@link #TENSORS} tensors by value (elementwise.cu's {@code AdamWTable} and {@code
 * SquaresTable}; no upload, so a CUDA graph may hold it), one block per {@link #CHUNK} elements.
 */
public final class MultiTensorOps {
  // elementwise.cu's MULTI_TENSORS and MULTI_CHUNK.
  static final int TENSORS = 48;
  static final int CHUNK = 4096;
  // Byte offsets of the tables' fields (pointers, then element counts, then the blocks where each
  // tensor starts, then the count), as the C structs lay them out.
  private static final long ADAMW_N = 4L * 8 * TENSORS;
  private static final long ADAMW_FIRST = ADAMW_N + 8L * TENSORS;
  private static final long ADAMW_COUNT = ADAMW_FIRST + 4L * (TENSORS + 1);
  private static final long ADAMW_BYTES = padded(ADAMW_COUNT + 4);
  private static final long SQUARES_N = 8L * TENSORS;
  private static final long SQUARES_FIRST = SQUARES_N + 8L * TENSORS;
  private static final long SQUARES_COUNT = SQUARES_FIRST + 4L * (TENSORS + 1);
  private static final long SQUARES_BYTES = padded(SQUARES_COUNT + 4);

  /** A struct's size: its fields' bytes rounded up to its pointers' alignment, 8. */
  private static long padded(long bytes) {
    return (bytes + 7) / 8 * 8;
  }

  private final DeviceTensors tensors;
  private final Kernels kernels;

  MultiTensorOps(Operands operands) {
    this.tensors = operands.tensors();
    this.kernels = tensors.kernels();
  }

  /**
   * {@link Backend#adamw(List, float, Backend.AdamWStep)} of contiguous F32 operands on this device
   * (checked by the caller), bit for bit the per-tensor step of each gradient times {@code
   * gradientScale} in float.
   */
  public void adamw(List<Backend.AdamWTensors> all, float gradientScale, Backend.AdamWStep s) {
    for (int from = 0; from < all.size(); from += TENSORS) {
      List<Backend.AdamWTensors> part = all.subList(from, Math.min(all.size(), from + TENSORS));
      try (Launch l = kernels.launch("elementwise.cu", "adamw_multi_f32")) {
        MemorySegment table = l.arena().allocate(ADAMW_BYTES, 8);
        for (int i = 0; i < part.size(); i++) {
          Backend.AdamWTensors t = part.get(i);
          table.set(ValueLayout.JAVA_LONG, 8L * i, addr(t.parameter()));
          table.set(ValueLayout.JAVA_LONG, 8L * (TENSORS + i), addr(t.gradient()));
          table.set(ValueLayout.JAVA_LONG, 8L * (2 * TENSORS + i), addr(t.m()));
          table.set(ValueLayout.JAVA_LONG, 8L * (3 * TENSORS + i), addr(t.v()));
        }
        int blocks =
            chunks(table, ADAMW_N, ADAMW_FIRST, ADAMW_COUNT, part, t -> t.parameter().numel());
        if (blocks == 0) {
          continue;
        }
        l.struct(table).f32(gradientScale).f32(s.shrink()).f32(s.stepSize());
        l.f32(s.beta1Complement()).f32(s.beta2()).f32(s.beta2Complement());
        l.f32(s.bias2Sqrt()).f32(s.eps());
        kernels.blocks(l, blocks);
      }
    }
  }

  /**
   * {@link Backend#sumsOfSquares} of contiguous F32 tensors on this device: each chunk's squares
   * summed in double, then each tensor's chunk sums in order (the same bits every run), rounded to
   * float once.
   */
  public Tensor sumsOfSquares(List<Tensor> all) {
    Tensor out = tensors.empty(DType.F32, all.size());
    long chunks = all.stream().mapToLong(t -> (t.numel() + CHUNK - 1) / CHUNK).sum();
    // The chunk sums, doubles in a buffer of 8-byte elements (the device stores no F64 tensors).
    Tensor partials = tensors.empty(DType.I64, (int) Math.max(1, chunks));
    long partialsAt = addr(partials);
    for (int from = 0; from < all.size(); from += TENSORS) {
      List<Tensor> part = all.subList(from, Math.min(all.size(), from + TENSORS));
      MemorySegment table;
      int blocks;
      try (Launch l = kernels.launch("elementwise.cu", "squares_partial_f32")) {
        table = l.arena().allocate(SQUARES_BYTES, 8);
        for (int i = 0; i < part.size(); i++) {
          table.set(ValueLayout.JAVA_LONG, 8L * i, addr(part.get(i)));
        }
        blocks = chunks(table, SQUARES_N, SQUARES_FIRST, SQUARES_COUNT, part, Tensor::numel);
        if (blocks > 0) {
          l.struct(table).ptr(partialsAt);
          kernels.blocks(l, blocks);
        }
        try (Launch total = kernels.launch("elementwise.cu", "squares_total_f32")) {
          total.struct(table).ptr(partialsAt).ptr(addr(out) + (long) Float.BYTES * from);
          kernels.blocks(total, part.size());
        }
      }
      partialsAt += 8L * blocks;
    }
    tensors.release(partials);
    return out;
  }

  /**
   * Writes each tensor's element count and first block into {@code table} (and the count of
   * tensors), and returns the blocks the launch needs.
   */
  private static <T> int chunks(
      MemorySegment table,
      long nAt,
      long firstAt,
      long countAt,
      List<T> part,
      ToLongFunction<T> n) {
    long block = 0;
    for (int i = 0; i < part.size(); i++) {
      long elements = n.applyAsLong(part.get(i));
      table.set(ValueLayout.JAVA_LONG, nAt + 8L * i, elements);
      table.set(ValueLayout.JAVA_INT, firstAt + 4L * i, Math.toIntExact(block));
      block += (elements + CHUNK - 1) / CHUNK;
    }
    table.set(ValueLayout.JAVA_INT, firstAt + 4L * part.size(), Math.toIntExact(block));
    table.set(ValueLayout.JAVA_INT, countAt, part.size());
    return Math.toIntExact(block);
  }
}
