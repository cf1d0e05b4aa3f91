package dev.stepweave.tensor.cpu;

/**
 * {@code C = A·B (+ bias)} in F32. Every output element is one fused multiply-add chain over k in
 * ascending order, started from zero, with the bias added last; no kernel ever splits or reorders
 * that chain, which is what makes the result of a row independent of the other rows (batch
 * invariance).
 */
final class Gemm {
  private Gemm() {}

  /**
   * @param a {@code [m, k]}
   * @param b {@code [k, n]}
   * @param bias {@code [m, n]}, usually a broadcast view of a vector, or null
   * @param c {@code [m, n]} output
   */
  static void multiply(
      WorkPool pool, int m, int n, int k, Matrix a, Matrix b, Matrix bias, Matrix c) {
    pool.forRange(
        m,
        Math.max(1, 4096 / Math.max(1, n)),
        (r0, r1) -> {
          for (int r = (int) r0; r < r1; r++) {
            for (int j = 0; j < n; j++) {
              float acc = 0f;
              for (int p = 0; p < k; p++) {
                acc = Math.fma(a.get(r, p), b.get(p, j), acc);
              }
              c.set(r, j, bias == null ? acc : acc + bias.get(r, j));
            }
          }
        });
  }
}
