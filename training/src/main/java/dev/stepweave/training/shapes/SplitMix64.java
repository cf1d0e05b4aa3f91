package dev.stepweave.training.shapes;

/**
 * Steele, Lea and Flood's SplitMix64: a tiny generator whose output is fixed by its published
 * constants, so a dataset made from a seed is the same on every JVM (unlike {@code
 * java.util.Random}'s subclasses, whose algorithms may change).
 */
public final class SplitMix64 {
  private static final long GAMMA = 0x9e3779b97f4a7c15L;
  private long state;

  public SplitMix64(long seed) {
    this.state = seed;
  }

  /**
   * A generator at this one's state after {@code n} more calls of {@link #nextLong} (each {@link
   * #nextDouble} is one): the stream's state is a counter, so a draw far ahead costs nothing to
   * reach, and parts of one stream can be drawn in parallel with the bits of drawing it in order.
   */
  public SplitMix64 ahead(long n) {
    return new SplitMix64(state + n * GAMMA);
  }

  public long nextLong() {
    state += GAMMA;
    return mix(state);
  }

  /** Uniform in {@code [0, bound)}; the modulo bias (below 2⁻³⁰ here) does not matter. */
  public int nextInt(int bound) {
    if (bound < 1) {
      throw new IllegalArgumentException("bound must be positive, got " + bound);
    }
    return (int) Long.remainderUnsigned(nextLong(), bound);
  }

  /** Uniform in {@code [lo, hi]}. */
  int between(int lo, int hi) {
    return lo + nextInt(hi - lo + 1);
  }

  /** Uniform in {@code [0, 1)}, 53 bits. */
  public double nextDouble() {
    return (nextLong() >>> 11) * 0x1.0p-53;
  }

  /** The finaliser: a well-mixed 64-bit function of {@code z}, to derive seeds from seeds. */
  public static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }
}
