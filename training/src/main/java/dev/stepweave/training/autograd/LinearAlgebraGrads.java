package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
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

  /** {@code y = x·wᵀ + b}: {@code dx = g·w}, {@code dw = gᵀ·x}, {@code db = Σ g}. */
  static BackwardRule linear(Backend device, Tensor x, Tensor w, Tensor bias) {
    return (g, wanted) -> {
      int k = w.dim(1);
      int n = w.dim(0);
      int m = (int) (g.numel() / n);
      Tensor gm = g.reshape(m, n);
      List<Contribution> out = new ArrayList<>(3);
      if (wanted.test(x)) {
        out.add(new Contribution(x, device.matmul(gm, w).reshape(x.shape())));
      }
      if (wanted.test(w)) {
        Tensor rows = (x.isContiguous() ? x : device.contiguous(x)).reshape(m, k);
        out.add(new Contribution(w, device.matmul(gm.transpose(0, 1), rows)));
      }
      if (bias != null && wanted.test(bias)) {
        Tensor columns = device.contiguous(gm.transpose(0, 1));
        out.add(new Contribution(bias, device.sumLastDim(columns).reshape(n)));
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

  private static int[] withLast(int[] batch, int rows, int cols) {
    int[] s = Arrays.copyOf(batch, batch.length + 2);
    s[batch.length] = rows;
    s[batch.length + 1] = cols;
    return s;
  }
}
