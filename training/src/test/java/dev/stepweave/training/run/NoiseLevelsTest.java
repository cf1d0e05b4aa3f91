package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The training σ: the whole range is the shift of u bit for bit (runs without a range draw what
 * they always drew); a range is the shifted distribution truncated, so it stays inside and keeps
 * the shift's relative odds.
 */
class NoiseLevelsTest {
  @Test
  void theWholeRangeIsTheShiftOfU() {
    SplittableRandom r = new SplittableRandom(1);
    for (double shift : new double[] {0.3, 1, 3, 12}) {
      NoiseLevels levels = NoiseLevels.shifted(shift);
      for (int i = 0; i < 1000; i++) {
        double u = r.nextDouble();
        assertEquals(shift * u / (1 + (shift - 1) * u), levels.sigma(u), "shift " + shift);
      }
    }
  }

  @Test
  void aRangeTruncatesTheShiftedDistribution() {
    NoiseLevels expert = new NoiseLevels(3, 0.85, 1);
    assertEquals(0.85, expert.sigma(0), 1e-12);
    assertEquals(1, expert.sigma(1), 1e-12);
    // Under the shift, P(σ ≤ s) = s / (3 − 2s): the odds of [0.85, 0.95) against [0.95, 1) are
    // those of the whole distribution's, F(0.95) − F(0.85) to 1 − F(0.95).
    double f85 = 0.85 / (3 - 1.7);
    double f95 = 0.95 / (3 - 1.9);
    SplittableRandom r = new SplittableRandom(2);
    int below = 0;
    int n = 200_000;
    for (int i = 0; i < n; i++) {
      double s = expert.sigma(r.nextDouble());
      assertTrue(s >= 0.85 && s <= 1, "inside the range: " + s);
      below += s < 0.95 ? 1 : 0;
    }
    assertEquals((f95 - f85) / (1 - f85), below / (double) n, 0.005);
  }

  @Test
  void refusesAnEmptyOrOutsideRange() {
    assertThrows(IllegalArgumentException.class, () -> new NoiseLevels(3, 0.9, 0.9));
    assertThrows(IllegalArgumentException.class, () -> new NoiseLevels(3, -0.1, 1));
    assertThrows(IllegalArgumentException.class, () -> new NoiseLevels(0, 0, 1));
  }
}
