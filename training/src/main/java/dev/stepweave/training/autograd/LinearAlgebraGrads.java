package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Backward rules of {@code linear} and the batched {@code matmul}, in the forward backend's own
 * operations: the products run on its GEMM, reading the saved inputs and their transposes as views
 * (both backends read a GEMM's operands through their strides, so nothing is transposed or copied
 * first), the bias's gradient is a row sum.
 */
final class LinearAlgebraGrads {
  private LinearAlgebraGrads() {}

  /**
   * {@code y = x·wᵀ + b}: {@code dx = g·w}, {@code dw = gᵀ·x}, {@code db = Σ g}. On a backend that
   * computes in BF16 the two products take BF16 operands, as its forward GEMM did (torch's autocast
   * backward): the F32 gradient and weight rounded once each, F32 accumulation and results.
   */
  static BackwardRule linear(Backend device, Tensor x, Tensor w, Tensor bias) {
    boolean bf16 = device.activationDType() == DType.BF16;
    return (g, wanted) -> {
      int k = w.dim(1);
      int n = w.dim(0);
      int m = (int) (g.numel() / n);
      Tensor gm = bf16 ? inBf16(device, g.reshape(m, n)) : g.reshape(m, n);
      List<Contribution> out = new ArrayList<>(3);
      if (wanted.test(x)) {
        Tensor wm = bf16 ? inBf16(device, w) : w;
        out.add(new Contribution(x, device.matmul(gm, wm).reshape(x.shape())));
      }
      if (wanted.test(w)) {
        Tensor rows = (x.isContiguous() ? x : device.contiguous(x)).reshape(m, k);
        Tensor xm = bf16 ? inBf16(device, rows) : rows;
        out.add(new Contribution(w, device.matmul(gm.transpose(0, 1), xm)));
      }
      if (bias != null && wanted.test(bias)) {
        out.add(new Contribution(bias, MiddleSums.of(device, g, 1, m, n).reshape(n)));
      }
      return out;
    };
  }

  /**
   * {@code y + linear(inner, U)} with {@code inner = s·linear(x, D)} (one low-rank update, {@code
   * inner} kept from the forward): the sum's gradient goes to y as it is and into the up factor's
   * {@link #linear} rule, whose gradient of {@code inner}, times s, into the down factor's — the
   * rules of the composition, chained.
   */
  static BackwardRule lowRankUpdate(Backend device, Tensor y, Tensor x, Tensor inner, LowRank u) {
    BackwardRule up = linear(device, inner, u.up(), null);
    BackwardRule down = linear(device, x, u.down(), null);
    return (g, wanted) -> {
      List<Contribution> out = new ArrayList<>(4);
      if (wanted.test(y)) {
        out.add(new Contribution(y, g));
      }
      boolean throughInner = wanted.test(x) || wanted.test(u.down());
      Tensor innerGradient = null;
      for (Contribution c : up.apply(g, t -> t == inner ? throughInner : wanted.test(t))) {
        if (c.target() == inner) {
          innerGradient = c.grad();
        } else {
          out.add(c);
        }
      }
      if (innerGradient != null) {
        out.addAll(down.apply(device.affine(innerGradient, u.scale(), 0f), wanted));
      }
      return out;
    };
  }

  /**
   * {@code [..., M, K] @ [..., K, N]} with broadcast batch dimensions: {@code da = g·bᵀ}, {@code db
   * = aᵀ·g} per batch entry, each addressed to its input broadcast to the output's batch shape.
   */
  static BackwardRule matmul(Backend device, Tensor a, Tensor b, Tensor out) {
    return (g, wanted) -> {
      int rank = out.rank();
      int m = out.dim(-2);
      int n = out.dim(-1);
      int k = a.dim(-1);
      int[] batch = Arrays.copyOf(out.shape(), rank - 2);
      Tensor ae = a.expand(withLast(batch, m, k));
      Tensor be = b.expand(withLast(batch, k, n));
      List<Contribution> list = new ArrayList<>(2);
      if (wanted.test(a)) {
        list.add(new Contribution(ae, device.matmul(g, be.transpose(-1, -2))));
      }
      if (wanted.test(b)) {
        list.add(new Contribution(be, device.matmul(ae.transpose(-1, -2), g)));
      }
      return list;
    };
  }

  /** {@code t} as BF16: itself when it is, else a copy on the device. */
  private static Tensor inBf16(Backend device, Tensor t) {
    return t.dtype() == DType.BF16 ? t : device.upload(t, DType.BF16);
  }

  private static int[] withLast(int[] batch, int rows, int cols) {
    int[] s = Arrays.copyOf(batch, batch.length + 2);
    s[batch.length] = rows;
    s[batch.length + 1] = cols;
    return s;
  }
}
