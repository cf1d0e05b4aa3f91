package dev.stepweave.training.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The schedules at the points transformers' schedule functions define. */
class LearningRateTest {
  @Test
  void constantNeverChanges() {
    LearningRate lr = new LearningRate.Constant(3e-4);
    assertEquals(3e-4, lr.at(0));
    assertEquals(3e-4, lr.at(100_000));
  }

  @Test
  void linearWarmupRisesFromZeroThenHolds() {
    LearningRate lr = new LearningRate.LinearWarmup(1e-3, 4);
    assertEquals(0, lr.at(0));
    assertEquals(2.5e-4, lr.at(1), 1e-18);
    assertEquals(7.5e-4, lr.at(3), 1e-18);
    assertEquals(1e-3, lr.at(4));
    assertEquals(1e-3, lr.at(50));
  }

  @Test
  void cosineWarmsUpThenFallsToZeroAtTheEnd() {
    LearningRate lr = new LearningRate.Cosine(1e-3, 10, 110);
    assertEquals(5e-4, lr.at(5), 1e-18);
    assertEquals(1e-3, lr.at(10), 1e-18);
    assertEquals(5e-4, lr.at(60), 1e-15, "half-way down the cosine");
    assertEquals(1e-3 * 0.5 * (1 + Math.cos(Math.PI * 0.25)), lr.at(35), 1e-15);
    assertEquals(0, lr.at(110), 1e-18);
    assertEquals(0, lr.at(500), 1e-18, "clamped past the end");
  }

  @Test
  void badSchedulesAreRefusedWithTheirNumbers() {
    var e = assertThrows(IllegalArgumentException.class, () -> new LearningRate.LinearWarmup(1, 0));
    assertEquals("warm-up needs at least one step, not 0", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new LearningRate.Cosine(1, 5, 5));
    assertEquals("cosine schedule needs 0 ≤ warm-up < total steps, not 5 and 5", e.getMessage());
  }
}
