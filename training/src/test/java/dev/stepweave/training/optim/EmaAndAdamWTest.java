package dev.stepweave.training.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The EMA's recurrence and AdamW's first step and its refusals (its parity is AdamWParityTest). */
class EmaAndAdamWTest {
  @Test
  void emaApproachesTheParametersGeometrically() {
    Tensor p = Tensor.of(new float[] {0f, 4f}, 2);
    Ema ema = new Ema(0.5, Map.of("w", p), new CpuBackend(1));
    Tensor moved = Tensor.of(new float[] {8f, 4f}, 2);
    ema.update(Map.of("w", moved));
    assertArrayEquals(new float[] {4f, 4f}, ema.averaged("w", p).toFloatArray());
    ema.update(Map.of("w", moved));
    assertArrayEquals(new float[] {6f, 4f}, ema.averaged("w", p).toFloatArray());
    assertArrayEquals(new float[] {0f, 4f}, p.toFloatArray(), "the parameters are untouched");
  }

  @Test
  void adamWsFirstStepMovesEachElementByTheRateAgainstItsGradientsSign() {
    // Step 1: m̂ = g and v̂ = g², so the move is lr·g/(|g| + ε) ≈ lr·sign(g), after the decay.
    Tensor p = Tensor.of(new float[] {1f, -2f, 0.5f}, 3);
    Tensor g = Tensor.of(new float[] {0.3f, -4f, 2e-3f}, 3);
    new AdamW(new AdamW.Settings(0.9, 0.99, 1e-8, 0.1)).step(Map.of("w", p), Map.of("w", g), 0.01);
    float[] v = p.toFloatArray();
    assertEquals(1 * (1 - 0.001) - 0.01, v[0], 1e-6);
    assertEquals(-2 * (1 - 0.001) + 0.01, v[1], 1e-6);
    assertEquals(0.5 * (1 - 0.001) - 0.01, v[2], 1e-6);
  }

  @Test
  void adamWRefusesAParameterWithoutAGradientAndBadSettings() {
    AdamW adam = new AdamW(AdamW.Settings.torchDefaults());
    Tensor p = Tensor.of(new float[] {1f}, 1);
    var e =
        assertThrows(
            IllegalArgumentException.class, () -> adam.step(Map.of("w", p), Map.of(), 1e-3));
    assertEquals("no gradient for parameter 'w'", e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> new AdamW.Settings(1.0, 0.99, 1e-8, 0.01));
    assertEquals("AdamW betas must lie in [0, 1), not (1.0, 0.99)", e.getMessage());
  }
}
