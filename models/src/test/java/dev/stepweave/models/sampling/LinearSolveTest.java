package dev.stepweave.models.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The small systems behind UniPC orders above 2. */
class LinearSolveTest {

  @Test
  void solvesWithPivoting() {
    // The first pivot is 0, so this needs a row swap; solution (1, -2, 3).
    float[][] a = {{0, 2, 1}, {1, 1, 1}, {2, -1, 0}};
    float[] b = {-1, 2, 4};
    assertArrayEquals(new float[] {1, -2, 3}, LinearSolve.solve(a, b, 3), 1e-6f);
  }

  @Test
  void solvesTheLeadingBlock() {
    float[][] a = {{2, 1, 9}, {1, 3, 9}, {9, 9, 9}};
    float[] b = {3, 5, 9};
    assertArrayEquals(new float[] {0.8f, 1.4f}, LinearSolve.solve(a, b, 2), 1e-6f);
  }

  @Test
  void rejectsSingularSystems() {
    assertThrows(
        ArithmeticException.class,
        () -> LinearSolve.solve(new float[][] {{1, 2}, {2, 4}}, new float[] {1, 2}, 2));
  }
}
