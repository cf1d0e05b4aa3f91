package dev.stepweave.models.sampling;

import java.util.Arrays;

/**
 * Solves the small dense systems of UniPC in float32 by LU with partial pivoting, the method of the
 * reference's {@code torch.linalg.solve}.
 */
final class LinearSolve {
  private LinearSolve() {}

  /**
   * Solves the leading {@code n × n} block of {@code a} against the first {@code n} of {@code b}.
   */
  static float[] solve(float[][] a, float[] b, int n) {
    float[][] m = new float[n][];
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      m[i] = Arrays.copyOf(a[i], n);
      x[i] = b[i];
    }
    for (int col = 0; col < n; col++) {
      int pivot = col;
      for (int row = col + 1; row < n; row++) {
        if (Math.abs(m[row][col]) > Math.abs(m[pivot][col])) {
          pivot = row;
        }
      }
      if (m[pivot][col] == 0f) {
        throw new ArithmeticException("singular UniPC system");
      }
      float[] rowSwap = m[col];
      m[col] = m[pivot];
      m[pivot] = rowSwap;
      float xSwap = x[col];
      x[col] = x[pivot];
      x[pivot] = xSwap;
      float inverse = 1f / m[col][col];
      for (int row = col + 1; row < n; row++) {
        float factor = m[row][col] * inverse;
        for (int j = col + 1; j < n; j++) {
          m[row][j] -= factor * m[col][j];
        }
        x[row] -= factor * x[col];
      }
    }
    for (int row = n - 1; row >= 0; row--) {
      float sum = x[row];
      for (int j = row + 1; j < n; j++) {
        sum -= m[row][j] * x[j];
      }
      x[row] = sum / m[row][row];
    }
    return x;
  }
}
