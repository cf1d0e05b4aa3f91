package dev.stepweave.tensor;

import java.util.Arrays;
import java.util.List;

/**
 * The shape rules of the {@link Backend} operations, checked once for every backend: each method
 * validates its operation's arguments (an {@link IllegalArgumentException} naming the shapes when
 * they do not fit) and returns the result's shape.
 */
public final class OpShapes {
  private OpShapes() {}

  /** NumPy broadcasting of two shapes. */
  public static int[] broadcast(int[] a, int[] b) {
    int rank = Math.max(a.length, b.length);
    int[] out = new int[rank];
    for (int i = 0; i < rank; i++) {
      int da = i < rank - a.length ? 1 : a[i - (rank - a.length)];
      int db = i < rank - b.length ? 1 : b[i - (rank - b.length)];
      if (da != db && da != 1 && db != 1) {
        throw new IllegalArgumentException(
            "cannot broadcast " + Arrays.toString(a) + " with " + Arrays.toString(b));
      }
      out[i] = da == 1 ? db : da;
    }
    return out;
  }

  /**
   * The broadcast batch dimensions of {@code a [..., M, K] @ b [..., K, N]} (everything but the
   * last two dimensions).
   */
  public static int[] matmulBatch(Tensor a, Tensor b) {
    if (a.rank() < 2 || b.rank() < 2 || a.dim(-1) != b.dim(-2)) {
      throw new IllegalArgumentException("matmul of " + a + " with " + b);
    }
    return broadcast(
        Arrays.copyOf(a.shape(), a.rank() - 2), Arrays.copyOf(b.shape(), b.rank() - 2));
  }

  /** {@code batch} followed by {@code rows, cols}. */
  public static int[] withMatrix(int[] batch, int rows, int cols) {
    int[] s = Arrays.copyOf(batch, batch.length + 2);
    s[batch.length] = rows;
    s[batch.length + 1] = cols;
    return s;
  }

  /** The shape of {@code parts} joined along {@code dim} (all other dimensions must agree). */
  public static int[] concat(List<Tensor> parts, int dim) {
    if (parts.isEmpty()) {
      throw new IllegalArgumentException("concat of no tensors");
    }
    Tensor first = parts.getFirst();
    int a = first.axis(dim);
    int[] shape = first.shape();
    int total = 0;
    for (Tensor p : parts) {
      int[] s = p.shape();
      boolean fits = s.length == shape.length;
      for (int i = 0; fits && i < s.length; i++) {
        fits = i == a || s[i] == shape[i];
      }
      if (!fits) {
        throw new IllegalArgumentException(
            "concat along dim "
                + a
                + " of "
                + Arrays.toString(s)
                + " with "
                + Arrays.toString(shape));
      }
      total += s[a];
    }
    shape[a] = total;
    return shape;
  }

  /**
   * Where a constant pad puts its input.
   *
   * @param shape the padded shape
   * @param before elements added before the input along each dimension (negative: cropped)
   */
  public record Padding(int[] shape, int[] before) {}

  /** The padding {@code pads} ((before, after) pairs, last dimension first) makes of {@code x}. */
  public static Padding pad(Tensor x, int[] pads) {
    if (pads.length % 2 != 0 || pads.length / 2 > x.rank()) {
      throw new IllegalArgumentException(
          "pad "
              + Arrays.toString(pads)
              + " needs (before, after) pairs for at most "
              + x.rank()
              + " dims");
    }
    int rank = x.rank();
    int[] shape = x.shape();
    int[] before = new int[rank];
    for (int p = 0; p < pads.length / 2; p++) {
      int d = rank - 1 - p;
      before[d] = pads[2 * p];
      shape[d] += pads[2 * p] + pads[2 * p + 1];
      if (shape[d] < 0) {
        throw new IllegalArgumentException(
            "pad " + Arrays.toString(pads) + " leaves a negative size for " + x);
      }
    }
    return new Padding(shape, before);
  }

  /**
   * Checks q {@code [B, Lq, H, D]}, k {@code [B, Lk, H, D]}, v {@code [B, Lk, H, Dv]} and returns
   * the output shape {@code [B, Lq, H, Dv]}.
   */
  public static int[] attention(Tensor q, Tensor k, Tensor v) {
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
      throw new IllegalArgumentException(
          "attention wants rank-4 [B, L, H, D] q, k, v; got " + q + ", " + k + ", " + v);
    }
    int b = q.dim(0), h = q.dim(2), d = q.dim(3);
    if (k.dim(0) != b || k.dim(2) != h || k.dim(3) != d) {
      throw new IllegalArgumentException("attention key " + k + " does not match query " + q);
    }
    if (v.dim(0) != b || v.dim(1) != k.dim(1) || v.dim(2) != h) {
      throw new IllegalArgumentException("attention value " + v + " does not match key " + k);
    }
    return new int[] {b, q.dim(1), h, v.dim(3)};
  }
}
