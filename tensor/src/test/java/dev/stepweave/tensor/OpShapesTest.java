package dev.stepweave.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The shape rules every backend checks through OpShapes: result shapes and refusals. */
class OpShapesTest {
  private static Tensor f32(int... shape) {
    return Tensor.zeros(DType.F32, shape);
  }

  @Test
  void linearMapsTheLastDimensionAndChecksTheBias() {
    assertArrayEquals(new int[] {2, 3, 5}, OpShapes.linear(f32(2, 3, 4), f32(5, 4), f32(5)));
    assertThrows(IllegalArgumentException.class, () -> OpShapes.linear(f32(2, 3), f32(5, 4), null));
    assertThrows(
        IllegalArgumentException.class, () -> OpShapes.linear(f32(2, 4), f32(5, 4), f32(4)));
  }

  @Test
  void conv3dGivesTheOutputShapeAndRefusesBadGeometry() {
    Tensor x = f32(1, 3, 4, 8, 8);
    Tensor w = f32(6, 3, 3, 3, 3);
    int[] one = {1, 1, 1};
    assertArrayEquals(
        new int[] {1, 6, 4, 4, 4}, OpShapes.conv3d(x, w, f32(6), new int[] {1, 2, 2}, one));
    assertThrows(
        IllegalArgumentException.class,
        () -> OpShapes.conv3d(x, w, null, new int[] {0, 1, 1}, one));
    assertThrows(
        IllegalArgumentException.class,
        () -> OpShapes.conv3d(x, f32(6, 2, 3, 3, 3), null, one, one));
    // A kernel one larger than the padded input is refused even where a stride of 2 would round
    // the output size up to 1.
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> OpShapes.conv3d(f32(1, 3, 2, 8, 8), w, null, new int[] {2, 1, 1}, new int[3]));
    assertTrue(e.getMessage().contains("larger than padded input"), e.getMessage());
  }

  @Test
  void ropeTablesMustBeLByHalfD() {
    assertDoesNotThrow(() -> OpShapes.rope(f32(1, 5, 2, 8), f32(5, 4), f32(5, 4)));
    assertThrows(
        IllegalArgumentException.class, () -> OpShapes.rope(f32(1, 5, 2, 7), f32(5, 4), f32(5, 4)));
    assertThrows(
        IllegalArgumentException.class, () -> OpShapes.rope(f32(1, 5, 2, 8), f32(5, 4), f32(4, 4)));
    assertDoesNotThrow(() -> OpShapes.rmsNormRope(f32(1, 5, 16), 2, f32(5, 4), f32(5, 4)));
    assertThrows(
        IllegalArgumentException.class,
        () -> OpShapes.rmsNormRope(f32(1, 5, 16), 3, f32(5, 4), f32(5, 4)));
  }

  @Test
  void upsampleEmbeddingAndSumsGiveTheirShapes() {
    assertArrayEquals(new int[] {2, 6, 8}, OpShapes.upsampleNearest2d(f32(2, 3, 4), 2, 2));
    assertThrows(IllegalArgumentException.class, () -> OpShapes.upsampleNearest2d(f32(3), 2, 2));
    assertArrayEquals(
        new int[] {2, 3, 4}, OpShapes.embedding(f32(10, 4), Tensor.zeros(DType.I64, 2, 3)));
    assertThrows(IllegalArgumentException.class, () -> OpShapes.embedding(f32(10, 4), f32(2)));
    assertArrayEquals(new int[] {2, 1}, OpShapes.sumLastDim(f32(2, 5)));
    assertThrows(IllegalArgumentException.class, () -> OpShapes.sumLastDim(f32()));
    assertDoesNotThrow(() -> OpShapes.rowParameter(null, 4, "weight"));
    assertThrows(IllegalArgumentException.class, () -> OpShapes.rowParameter(f32(3), 4, "weight"));
  }
}
