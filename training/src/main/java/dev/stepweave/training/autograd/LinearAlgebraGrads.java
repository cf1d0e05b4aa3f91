package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Backward rules of {@code linear} and the batched {@code matmul}. Their products run on the host
 * backend's own GEMM, the forward's kernel (in double they dominated a training step), reading the
 * saved inputs and their transposes as views: the GEMM packs its panels through the strides, so
 * nothing is transposed or copied first.
 */
final class LinearAlgebraGrads {
  private LinearAlgebraGrads() {}

  /** {@code y = x·wᵀ + b}: {@code dx = g·w}, {@code dw = gᵀ·x}, {@code db = Σ g}. */
  static BackwardRule linear(Backend host, Tensor x, Tensor w, Tensor bias) {
    return (g, wanted) -> {
      int k = w.dim(1);
      int n = w.dim(0);
      int m = g.length / n;
      Tensor gm = Tensor.of(g, m, n);
      List<Contribution> out = new ArrayList<>(3);
      if (wanted.test(x)) {
        out.add(new Contribution(x, host.matmul(gm, w).toFloatArray()));
      }
      if (wanted.test(w)) {
        Tensor rows = (x.isContiguous() ? x : host.contiguous(x)).reshape(m, k);
        out.add(new Contribution(w, host.matmul(gm.transpose(0, 1), rows).toFloatArray()));
      }
      if (bias != null && wanted.test(bias)) {
        double[] db = new double[n];
        for (int r = 0; r < m; r++) {
          for (int j = 0; j < n; j++) {
            db[j] += g[r * n + j];
          }
        }
        out.add(new Contribution(bias, Host.floats(db)));
      }
      return out;
    };
  }

  /**
   * {@code [..., M, K] @ [..., K, N]} with broadcast batch dimensions: {@code da = g·bᵀ}, {@code db
   * = aᵀ·g} per batch entry, each addressed to its input broadcast to the output's batch shape.
   */
  static BackwardRule matmul(Backend host, Tensor a, Tensor b, Tensor out) {
    return (g, wanted) -> {
      int rank = out.rank();
      int m = out.dim(-2);
      int n = out.dim(-1);
      int k = a.dim(-1);
      int[] batch = Arrays.copyOf(out.shape(), rank - 2);
      Tensor ae = a.expand(withLast(batch, m, k));
      Tensor be = b.expand(withLast(batch, k, n));
      Tensor gt = Tensor.of(g, out.shape());
      List<Contribution> list = new ArrayList<>(2);
      if (wanted.test(a)) {
        list.add(new Contribution(ae, host.matmul(gt, be.transpose(-1, -2)).toFloatArray()));
      }
      if (wanted.test(b)) {
        list.add(new Contribution(be, host.matmul(ae.transpose(-1, -2), gt).toFloatArray()));
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
