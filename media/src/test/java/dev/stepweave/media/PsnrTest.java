package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.Tensor;
import org.junit.jupiter.api.Test;

class PsnrTest {
  @Test
  void uniformErrorOfOneTenthIsTwentyDb() {
    assertEquals(20.0, Psnr.between(Tensor.full(0.5f, 2, 3, 4), Tensor.full(0.6f, 2, 3, 4)), 1e-4);
  }

  @Test
  void identicalTensorsAreInfinitelyClose() {
    Tensor t = SyntheticClips.greyNoise(2, 4, 4, 1);
    assertEquals(Double.POSITIVE_INFINITY, Psnr.between(t, t));
  }

  @Test
  void shapesMustMatch() {
    assertThrows(
        IllegalArgumentException.class,
        () -> Psnr.between(Tensor.full(0f, 2, 3), Tensor.full(0f, 3, 2)));
  }
}
