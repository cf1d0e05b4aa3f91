package dev.stepweave.training.autograd;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Gradients kept per storage, not per tensor: a view (reshape, permute, slice, select, expand) is a
 * different {@link Tensor} over the same storage, so addressing gradients by storage element makes
 * every view differentiable without recording it — a view's gradient is scattered into, or gathered
 * from, its storage's buffer through the view's own strides and offset.
 */
public final class Gradients {
  private final Map<Storage, float[]> buffers = new IdentityHashMap<>();
  private final Map<Storage, DType> dtypes = new IdentityHashMap<>();

  void accumulate(Tensor target, float[] grad) {
    dtypes.putIfAbsent(target.storage(), target.dtype());
    float[] buffer =
        buffers.computeIfAbsent(
            target.storage(), s -> new float[(int) (s.byteSize() / target.dtype().byteSize())]);
    long n = target.numel();
    if (target.isContiguous()) {
      int base = (int) target.offset();
      for (int i = 0; i < n; i++) {
        buffer[base + i] += grad[i];
      }
    } else {
      // Row by row along the last dimension, in row-major element order (the same additions, in
      // the same order, as addressing element i through Tensor.elementOffset(i)).
      forEachRow(
          target,
          (first, at, step, length) -> {
            for (int j = 0; j < length; j++, at += step) {
              buffer[at] += grad[first + j];
            }
          });
    }
  }

  /** A row of a strided view: elements {@code first ..} (row-major) at {@code at + j·step}. */
  private interface Row {
    void visit(int first, int at, int step, int length);
  }

  /** Visits the rows along {@code t}'s last dimension in row-major order. */
  private static void forEachRow(Tensor t, Row row) {
    int[] shape = t.shape();
    long[] strides = t.strides();
    int rank = shape.length;
    int inner = shape[rank - 1];
    int step = (int) strides[rank - 1];
    int[] index = new int[rank];
    long offset = t.offset();
    long n = t.numel();
    for (int i = 0; i < n; i += inner) {
      row.visit(i, (int) offset, step, inner);
      offset = nextRow(index, shape, strides, offset);
    }
  }

  /**
   * Advances {@code index} (over every dimension but the last) to the next row in row-major order
   * and returns that row's first element offset, given the current one.
   */
  private static long nextRow(int[] index, int[] shape, long[] strides, long row) {
    for (int d = shape.length - 2; d >= 0; d--) {
      if (++index[d] < shape[d]) {
        return row + strides[d];
      }
      row -= (long) (shape[d] - 1) * strides[d];
      index[d] = 0;
    }
    return row;
  }

  /** The gradient of {@code t}'s elements in row-major order, or null when none reached it. */
  float[] gather(Tensor t) {
    float[] buffer = buffers.get(t.storage());
    if (buffer == null) {
      return null;
    }
    int n = (int) t.numel();
    float[] out = new float[n];
    if (t.isContiguous()) {
      System.arraycopy(buffer, (int) t.offset(), out, 0, n);
    } else {
      forEachRow(
          t,
          (first, at, step, length) -> {
            for (int j = 0; j < length; j++, at += step) {
              out[first + j] = buffer[at];
            }
          });
    }
    return out;
  }

  void release(Tensor t) {
    buffers.remove(t.storage());
  }

  /** Every gradient held, each addressed to the whole of its storage. */
  List<Contribution> asContributions() {
    List<Contribution> out = new ArrayList<>(buffers.size());
    buffers.forEach(
        (storage, g) ->
            out.add(
                new Contribution(
                    new Tensor(
                        storage, dtypes.get(storage), new int[] {g.length}, new long[] {1}, 0),
                    g)));
    return out;
  }

  /** Whether any gradient reached {@code t}'s storage. */
  public boolean reached(Tensor t) {
    return buffers.containsKey(t.storage());
  }

  /**
   * The gradient of {@code t} (a tensor the tape tracked, or a view of one) as a CPU F32 tensor of
   * its shape; zeros when nothing the output depends on reads it.
   */
  public Tensor of(Tensor t) {
    float[] g = gather(t);
    return g == null ? Tensor.zeros(DType.F32, t.shape()) : Tensor.of(g, t.shape());
  }
}
