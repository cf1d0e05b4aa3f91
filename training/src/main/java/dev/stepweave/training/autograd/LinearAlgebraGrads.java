package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Backward rules of {@code linear} and the batched {@code matmul}. Their products run on the host
 * backend's GEMM, the kernel of the forward: in double they dominated a training step.
 */
final class LinearAlgebraGrads {
  private LinearAlgebraGrads() {}

  /** {@code y = x·wᵀ + b}: {@code dx = g·w}, {@code dw = gᵀ·x}, {@code db = Σ g}. */
  static BackwardRule linear(Backend host, Tensor x, Tensor w, Tensor bias) {
    return (g, wanted) -> {
      int k = w.dim(1);
      int n = w.dim(0);
      int m = g.length / n;
      List<Contribution> out = new ArrayList<>(3);
      if (wanted.test(x)) {
        out.add(new Contribution(x, product(host, g, w.toFloatArray(), m, n, k, false, false)));
      }
      if (wanted.test(w)) {
        out.add(new Contribution(w, product(host, g, x.toFloatArray(), n, m, k, true, false)));
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
      int batches = (int) Tensor.numel(batch);
      boolean wantA = wanted.test(a);
      boolean wantB = wanted.test(b);
      float[] av = wantB ? ae.toFloatArray() : null;
      float[] bv = wantA ? be.toFloatArray() : null;
      float[] da = wantA ? new float[batches * m * k] : null;
      float[] db = wantB ? new float[batches * k * n] : null;
      for (int t = 0; t < batches; t++) {
        float[] gt = Arrays.copyOfRange(g, t * m * n, (t + 1) * m * n);
        if (wantA) {
          // da[m,k] = Σ_n g[m,n]·b[k,n]: b as [K, N] is the "w" of a linear with N inputs.
          float[] bt = Arrays.copyOfRange(bv, t * k * n, (t + 1) * k * n);
          System.arraycopy(product(host, gt, bt, m, n, k, false, true), 0, da, t * m * k, m * k);
        }
        if (wantB) {
          // db[k,n] = Σ_m a[m,k]·g[m,n].
          float[] at = Arrays.copyOfRange(av, t * m * k, (t + 1) * m * k);
          float[] dbt = product(host, at, gt, k, m, n, true, false);
          System.arraycopy(dbt, 0, db, t * k * n, k * n);
        }
      }
      List<Contribution> list = new ArrayList<>(2);
      if (wantA) {
        list.add(new Contribution(ae, da));
      }
      if (wantB) {
        list.add(new Contribution(be, db));
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

  /**
   * {@code C[i, j] = Σ_r L[i, r]·R[r, j]} over {@code inner} terms, for {@code rows × cols}
   * results, by the host backend's own GEMM (its {@code linear}, {@code L·Rᵀᵀ}): float products
   * with float accumulation, as the forward computes. {@code leftTransposed}: L is stored {@code
   * [inner, rows]}; {@code rightTransposed}: R is stored {@code [cols, inner]}.
   */
  private static float[] product(
      Backend host,
      float[] left,
      float[] right,
      int rows,
      int inner,
      int cols,
      boolean leftTransposed,
      boolean rightTransposed) {
    float[] l = leftTransposed ? transpose(left, inner, rows) : left;
    float[] rt = rightTransposed ? right : transpose(right, inner, cols);
    return host.linear(Tensor.of(l, rows, inner), Tensor.of(rt, cols, inner), null).toFloatArray();
  }

  /** {@code m} stored {@code [a, b]}, returned as {@code [b, a]}. */
  private static float[] transpose(float[] m, int a, int b) {
    float[] t = new float[m.length];
    for (int i = 0; i < a; i++) {
      for (int j = 0; j < b; j++) {
        t[j * a + i] = m[i * b + j];
      }
    }
    return t;
  }
}
