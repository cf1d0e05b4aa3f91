package dev.stepweave.cli.bench;

import java.util.SplittableRandom;
import java.util.concurrent.Semaphore;
import java.util.concurrent.locks.LockSupport;

/**
 * When a run's requests arrive. A request's latency runs from its arrival, so time it spends
 * waiting for the engine counts.
 */
public sealed interface Arrivals {

  /**
   * The offered load, for the table: {@code all at t=0}, {@code 4 outstanding}, {@code Poisson
   * 2/s}.
   */
  String label(int requests);

  /** The same kind of arrivals for round {@code round} (a fresh draw where there is one). */
  Arrivals forRound(int round);

  /**
   * Paces one run's submissions of {@code requests} requests, {@code startNanos} ({@link
   * System#nanoTime}) being t=0.
   */
  Pacer pacer(int requests, long startNanos);

  /** Paces the submissions of one run; the run's one client thread calls it. */
  interface Pacer {
    /**
     * Waits until request {@code i} arrives.
     *
     * @return its arrival time ({@link System#nanoTime})
     */
    long awaitArrival(int i) throws InterruptedException;

    /** Request {@code i} has its result (called from any thread). */
    void finished(int i);
  }

  /**
   * A closed loop: {@code concurrency} clients, each submitting its next request as soon as its
   * last one has its result; with at least as many clients as requests, everything arrives at t=0.
   */
  record ClosedLoop(int concurrency) implements Arrivals {
    public ClosedLoop {
      if (concurrency < 1) {
        throw new IllegalArgumentException("concurrency must be >= 1, got " + concurrency);
      }
    }

    @Override
    public String label(int requests) {
      return concurrency >= requests ? "all at t=0" : concurrency + " outstanding";
    }

    @Override
    public ClosedLoop forRound(int round) {
      return this;
    }

    @Override
    public Pacer pacer(int requests, long startNanos) {
      Semaphore outstanding = new Semaphore(concurrency);
      return new Pacer() {
        @Override
        public long awaitArrival(int i) throws InterruptedException {
          outstanding.acquire();
          return System.nanoTime();
        }

        @Override
        public void finished(int i) {
          outstanding.release();
        }
      };
    }
  }

  /**
   * An open loop: arrivals of a Poisson process of {@code ratePerSecond}, whatever the engine does
   * — independent exponential gaps drawn from {@code seed}, scheduled up front and submitted at
   * their times. The same seed gives the same uniform draws at every rate, so the schedules of two
   * rates differ only in their time scale.
   */
  record Poisson(double ratePerSecond, long seed) implements Arrivals {
    public Poisson {
      if (!(ratePerSecond > 0) || Double.isInfinite(ratePerSecond)) {
        throw new IllegalArgumentException(
            "an arrival rate must be a positive number of requests per second, got "
                + ratePerSecond);
      }
    }

    @Override
    public String label(int requests) {
      return "Poisson " + rate(ratePerSecond) + "/s";
    }

    @Override
    public Poisson forRound(int round) {
      return new Poisson(ratePerSecond, seed + round);
    }

    /** The first {@code n} arrival times after t=0, in nanoseconds: cumulative gaps. */
    public long[] offsetsNanos(int n) {
      SplittableRandom rnd = new SplittableRandom(seed);
      long[] out = new long[n];
      double seconds = 0;
      for (int i = 0; i < n; i++) {
        // Inverse CDF of the exponential distribution; 1 − u is in (0, 1], so the log is finite.
        seconds += -Math.log(1 - rnd.nextDouble()) / ratePerSecond;
        out[i] = Math.round(seconds * 1e9);
      }
      return out;
    }

    @Override
    public Pacer pacer(int requests, long startNanos) {
      long[] offsets = offsetsNanos(requests);
      return new Pacer() {
        @Override
        public long awaitArrival(int i) throws InterruptedException {
          long at = startNanos + offsets[i];
          for (long wait = at - System.nanoTime(); wait > 0; wait = at - System.nanoTime()) {
            LockSupport.parkNanos(wait);
            if (Thread.interrupted()) {
              throw new InterruptedException();
            }
          }
          // The scheduled time, not when the client got round to it: a late client counts too.
          return at;
        }

        @Override
        public void finished(int i) {}
      };
    }

    /** A rate as written: {@code 4}, {@code 0.5}. */
    static String rate(double r) {
      return r == Math.rint(r) ? Long.toString((long) r) : Double.toString(r);
    }
  }
}
