package dev.stepweave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** When requests arrive: the Poisson schedule and the closed loop. */
class ArrivalsTest {

  private static double[] gapsSeconds(long[] offsets) {
    double[] gaps = new double[offsets.length];
    for (int i = 0; i < offsets.length; i++) {
      gaps[i] = (offsets[i] - (i == 0 ? 0 : offsets[i - 1])) / 1e9;
    }
    return gaps;
  }

  @Test
  void aPoissonScheduleIsTheSameForTheSameSeedAndRisesFromTZero() {
    long[] a = new Arrivals.Poisson(4, 42).offsetsNanos(100);
    assertArrayEquals(a, new Arrivals.Poisson(4, 42).offsetsNanos(100));
    assertFalse(Arrays.equals(a, new Arrivals.Poisson(4, 43).offsetsNanos(100)));
    assertFalse(Arrays.equals(a, new Arrivals.Poisson(4, 42).forRound(1).offsetsNanos(100)));
    assertTrue(a[0] > 0);
    for (int i = 1; i < a.length; i++) {
      assertTrue(a[i] >= a[i - 1], "arrival " + i);
    }
    // A longer schedule starts with the shorter one.
    assertArrayEquals(a, Arrays.copyOf(new Arrivals.Poisson(4, 42).offsetsNanos(200), 100));
  }

  @Test
  void poissonGapsAreExponentialWithMeanOneOverTheRate() {
    int n = 20_000;
    double rate = 4;
    double[] gaps = gapsSeconds(new Arrivals.Poisson(rate, 7).offsetsNanos(n));
    double mean = Arrays.stream(gaps).average().orElseThrow();
    double sd = Math.sqrt(Arrays.stream(gaps).map(g -> (g - mean) * (g - mean)).sum() / (n - 1));
    // The sample mean's standard error is 0.25 s / √20000 = 0.7 %; bounds at over four of them.
    assertEquals(1 / rate, mean, 0.03 / rate);
    // An exponential's standard deviation equals its mean, and e⁻¹ of it lies above the mean.
    assertEquals(1.0, sd / mean, 0.05);
    double above = Arrays.stream(gaps).filter(g -> g > 1 / rate).count() / (double) n;
    assertEquals(Math.exp(-1), above, 0.02);
  }

  @Test
  void twoRatesDrawTheSameScheduleOnTwoTimeScales() {
    long[] slow = new Arrivals.Poisson(2, 5).offsetsNanos(50);
    long[] fast = new Arrivals.Poisson(4, 5).offsetsNanos(50);
    for (int i = 0; i < slow.length; i++) {
      assertEquals(slow[i], 2 * fast[i], 2, "arrival " + i);
    }
  }

  @Test
  void aPoissonPacerReleasesEachRequestAtItsScheduledTimeNotBefore() throws Exception {
    var arrivals = new Arrivals.Poisson(200, 3);
    long[] offsets = arrivals.offsetsNanos(3);
    long start = System.nanoTime();
    Arrivals.Pacer pacer = arrivals.pacer(3, start);
    for (int i = 0; i < 3; i++) {
      long at = pacer.awaitArrival(i);
      assertEquals(start + offsets[i], at, "the arrival is the scheduled time");
      assertTrue(System.nanoTime() >= at, "released before its time");
    }
  }

  @Test
  void aClosedLoopLetsTheNextRequestInOnlyWhenOneFinishes() throws Exception {
    Arrivals.Pacer pacer = new Arrivals.ClosedLoop(2).pacer(3, System.nanoTime());
    pacer.awaitArrival(0);
    pacer.awaitArrival(1);
    var third =
        new Thread(
            () -> {
              try {
                pacer.awaitArrival(2);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    third.start();
    third.join(200);
    assertTrue(third.isAlive(), "a third request got in with two outstanding");
    pacer.finished(0);
    third.join(10_000);
    assertFalse(third.isAlive());
  }

  @Test
  void loadsAreLabelledAsOffered() {
    assertEquals("all at t=0", new Arrivals.ClosedLoop(16).label(16));
    assertEquals("4 outstanding", new Arrivals.ClosedLoop(4).label(16));
    assertEquals("Poisson 2/s", new Arrivals.Poisson(2, 0).label(16));
    assertEquals("Poisson 0.5/s", new Arrivals.Poisson(0.5, 0).label(16));
  }

  @Test
  void aRateMustBePositiveAndFinite() {
    for (double bad : new double[] {0, -1, Double.NaN, Double.POSITIVE_INFINITY}) {
      var e = assertThrows(IllegalArgumentException.class, () -> new Arrivals.Poisson(bad, 0));
      assertTrue(e.getMessage().startsWith("an arrival rate must be a positive number"), "" + bad);
    }
    assertThrows(IllegalArgumentException.class, () -> new Arrivals.ClosedLoop(0));
  }
}
