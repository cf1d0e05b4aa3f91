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

  /** {@code count} stacked tensors of {@code shape}: {@code [count, ...shape]}. */
  public static int[] stacked(int count, int[] shape) {
    int[] s = new int[shape.length + 1];
    s[0] = count;
    System.arraycopy(shape, 0, s, 1, shape.length);
    return s;
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

  /**
   * An attention bias (already in the dtype and place the kernel reads) as a view broadcast to
   * {@code [B, H, Lq, Lk]}, or null for none.
   *
   * @throws IllegalArgumentException naming both shapes when it does not broadcast
   */
  public static Tensor attentionBias(Tensor bias, int b, int h, int lq, int lk) {
    if (bias == null) {
      return null;
    }
    try {
      return bias.expand(b, h, lq, lk);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "attention bias "
              + Arrays.toString(bias.shape())
              + " does not broadcast to [B, H, Lq, Lk] = "
              + Arrays.toString(new int[] {b, h, lq, lk}));
    }
  }

  /**
   * Checks x {@code [..., in]}, weight {@code [out, in]} and bias {@code [out]} (or null) of {@code
   * x @ w^T + bias} and returns the output shape {@code [..., out]}.
   */
  public static int[] linear(Tensor x, Tensor w, Tensor bias) {
    if (x.rank() < 1 || w.rank() != 2 || x.dim(-1) != w.dim(1)) {
      throw new IllegalArgumentException("linear of x " + x + " with weight " + w + " [out, in]");
    }
    int n = w.dim(0);
    if (bias != null && bias.numel() != n) {
      throw new IllegalArgumentException("linear bias " + bias + " for " + n + " outputs");
    }
    int[] shape = x.shape();
    shape[shape.length - 1] = n;
    return shape;
  }

  /**
   * The shape of each of {@link Backend#linearStacked}'s results: w {@code [G, out, in]} with x's
   * last dimension {@code in}, bias {@code [G, out]} or null.
   */
  public static int[] linearStacked(Tensor x, Tensor w, Tensor bias) {
    if (w.rank() != 3
        || w.dim(0) < 1
        || (bias != null
            && (bias.rank() != 2 || bias.dim(0) != w.dim(0) || bias.dim(1) != w.dim(1)))) {
      throw new IllegalArgumentException(
          "stacked linear weights must be [G, out, in] with bias [G, out], got " + w + ", " + bias);
    }
    return linear(x, w.select(0, 0), bias == null ? null : bias.select(0, 0));
  }

  /**
   * {@code y [B, L, out]} and {@code x [B, L, in]} with one list of updates per batch row, each
   * {@code down [r, in]}, {@code up [out, r]}.
   */
  public static void lowRank(Tensor y, Tensor x, List<List<LowRank>> rows) {
    if (y.rank() != 3 || x.rank() != 3 || y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1)) {
      throw new IllegalArgumentException(
          "low-rank update needs y [B, L, out] and x [B, L, in], got y "
              + Arrays.toString(y.shape())
              + " and x "
              + Arrays.toString(x.shape()));
    }
    updates(rows, y.dim(0), x.dim(2), y.dim(2));
  }

  /**
   * {@code linear(x, w, bias)} of x {@code [B, L, in]} plus updates as for {@link #lowRank};
   * returns the output shape {@code [B, L, out]}.
   */
  public static int[] linearLowRank(Tensor x, Tensor w, Tensor bias, List<List<LowRank>> rows) {
    int[] shape = linear(x, w, bias);
    if (x.rank() != 3) {
      throw new IllegalArgumentException("low-rank update needs x [B, L, in], got " + x);
    }
    updates(rows, x.dim(0), x.dim(2), w.dim(0));
    return shape;
  }

  private static void updates(List<List<LowRank>> rows, int batch, int in, int out) {
    if (rows.size() != batch) {
      throw new IllegalArgumentException(
          "low-rank update has " + rows.size() + " row lists for a batch of " + batch);
    }
    for (List<LowRank> row : rows) {
      for (LowRank u : row) {
        if (u.in() != in || u.out() != out) {
          throw new IllegalArgumentException(
              "low-rank factors down "
                  + Arrays.toString(u.down().shape())
                  + " / up "
                  + Arrays.toString(u.up().shape())
                  + " do not fit a layer "
                  + in
                  + " -> "
                  + out);
        }
      }
    }
  }

  /**
   * Checks x {@code [B, C, T, H, W]}, weight {@code [O, C, kt, kh, kw]}, bias {@code [O]} (or
   * null), 3 positive strides and 3 non-negative paddings, and returns the output shape {@code [B,
   * O, To, Ho, Wo]}.
   */
  public static int[] conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    if (x.rank() != 5 || w.rank() != 5) {
      throw new IllegalArgumentException(
          "conv3d wants x [B, C, T, H, W] and w [O, C, kt, kh, kw]; got " + x + " and " + w);
    }
    if (stride.length != 3 || padding.length != 3) {
      throw new IllegalArgumentException(
          "conv3d stride "
              + Arrays.toString(stride)
              + " and padding "
              + Arrays.toString(padding)
              + " must have 3 entries");
    }
    int channels = x.dim(1);
    int outChannels = w.dim(0);
    int[] kernel = {w.dim(2), w.dim(3), w.dim(4)};
    if (w.dim(1) != channels) {
      throw new IllegalArgumentException(
          "conv3d weight " + w + " expects " + w.dim(1) + " input channels, x has " + channels);
    }
    int[] out = {x.dim(0), outChannels, 0, 0, 0};
    for (int a = 0; a < 3; a++) {
      if (stride[a] < 1 || padding[a] < 0) {
        throw new IllegalArgumentException(
            "conv3d stride "
                + Arrays.toString(stride)
                + " must be positive and padding "
                + Arrays.toString(padding)
                + " non-negative");
      }
      int in = x.dim(2 + a);
      if (in + 2 * padding[a] < kernel[a]) {
        throw new IllegalArgumentException(
            "conv3d kernel " + Arrays.toString(kernel) + " larger than padded input " + x);
      }
      out[2 + a] = (in + 2 * padding[a] - kernel[a]) / stride[a] + 1;
    }
    if (bias != null && bias.numel() != outChannels) {
      throw new IllegalArgumentException(
          "conv3d bias " + bias + " does not match " + outChannels + " output channels");
    }
    return out;
  }

  /** Checks x {@code [B, L, H, D]} with even D and its RoPE tables cos, sin {@code [L, D/2]}. */
  public static void rope(Tensor x, Tensor cos, Tensor sin) {
    if (x.rank() != 4 || x.dim(3) % 2 != 0) {
      throw new IllegalArgumentException("rope wants x [B, L, H, D] with even D, got " + x);
    }
    ropeTables(x, cos, sin, x.dim(3) / 2);
  }

  /**
   * Checks {@code rmsNormRope}'s x {@code [B, L, H·D]} for {@code heads} heads of even D and its
   * RoPE tables cos, sin {@code [L, D/2]}.
   */
  public static void rmsNormRope(Tensor x, int heads, Tensor cos, Tensor sin) {
    int n = x.rank() == 0 ? 0 : x.dim(-1);
    if (x.rank() != 3 || heads <= 0 || n % heads != 0 || (n / heads) % 2 != 0) {
      throw new IllegalArgumentException(
          "rmsNormRope wants [B, L, H·D] with " + heads + " heads of even D, got " + x);
    }
    ropeTables(x, cos, sin, n / heads / 2);
  }

  private static void ropeTables(Tensor x, Tensor cos, Tensor sin, int half) {
    int l = x.dim(1);
    for (Tensor t : List.of(cos, sin)) {
      if (t.rank() != 2 || t.dim(0) != l || t.dim(1) != half) {
        throw new IllegalArgumentException(
            "rope table " + t + " must be [L, D/2] = [" + l + ", " + half + "] for " + x);
      }
    }
  }

  /** Checks {@code upsampleNearest2d}'s arguments and returns the shape with H and W scaled. */
  public static int[] upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    if (x.rank() < 2 || scaleH < 1 || scaleW < 1) {
      throw new IllegalArgumentException(
          "upsampleNearest2d of " + x + " by (" + scaleH + ", " + scaleW + ")");
    }
    int[] shape = x.shape();
    shape[shape.length - 2] *= scaleH;
    shape[shape.length - 1] *= scaleW;
    return shape;
  }

  /**
   * Checks a table {@code [V, D]} and integer ids (their range is the backend's to check, where the
   * ids are readable) and returns the output shape {@code [..ids, D]}.
   */
  public static int[] embedding(Tensor table, Tensor ids) {
    if (table.rank() != 2) {
      throw new IllegalArgumentException("embedding table must be [V, D], got " + table);
    }
    if (ids.dtype().isFloating()) {
      throw new IllegalArgumentException("embedding ids must be integers, got " + ids);
    }
    int[] shape = Arrays.copyOf(ids.shape(), ids.rank() + 1);
    shape[ids.rank()] = table.dim(1);
    return shape;
  }

  /**
   * Checks that a norm's optional per-row parameter {@code what} (null: none) has {@code n}
   * elements.
   */
  public static void rowParameter(Tensor p, int n, String what) {
    if (p != null && p.numel() != n) {
      throw new IllegalArgumentException(what + " has " + p.numel() + " elements, expected " + n);
    }
  }

  /** The shape of {@code sumLastDim(x)}: the last dimension becomes 1 (a scalar is refused). */
  public static int[] sumLastDim(Tensor x) {
    if (x.rank() == 0) {
      throw new IllegalArgumentException("sumLastDim of a scalar");
    }
    int[] shape = x.shape();
    shape[shape.length - 1] = 1;
    return shape;
  }
}
