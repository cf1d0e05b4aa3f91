package dev.stepweave.tensor.rng;

import java.util.Arrays;

/**
 * The 32-bit Mersenne Twister (MT19937) with the reference initialisation, as torch's CPU generator
 * runs it. Mutable; copy it to branch or checkpoint a stream.
 */
public final class Mt19937 {
  /** Number of 32-bit words of state. */
  public static final int WORDS = 624;

  private static final int SHIFT = 397;
  private static final int MATRIX_A = 0x9908b0df;
  private static final int UPPER_MASK = 0x80000000;
  private static final int LOWER_MASK = 0x7fffffff;

  private final int[] words;
  private int position;

  private Mt19937(int[] words, int position) {
    this.words = words;
    this.position = position;
  }

  /**
   * The stream torch starts for {@code manual_seed(seed)}: only the low 32 bits of the seed count.
   */
  public static Mt19937 seeded(long seed) {
    int[] w = new int[WORDS];
    w[0] = (int) seed;
    for (int i = 1; i < WORDS; i++) {
      w[i] = 1812433253 * (w[i - 1] ^ (w[i - 1] >>> 30)) + i;
    }
    return new Mt19937(w, WORDS);
  }

  /**
   * Resumes a stream from its words and the index of the next word to temper ({@link #WORDS} means
   * the block is used up and is regenerated on the next draw).
   */
  public static Mt19937 resume(int[] words, int position) {
    if (words.length != WORDS) {
      throw new IllegalArgumentException(
          "MT19937 state needs " + WORDS + " words, got " + words.length);
    }
    if (position < 0 || position > WORDS) {
      throw new IllegalArgumentException(
          "MT19937 position " + position + " out of [0, " + WORDS + "]");
    }
    return new Mt19937(words.clone(), position);
  }

  /** The next 32 random bits (an unsigned value held in an int). */
  public int nextInt() {
    if (position >= WORDS) {
      regenerate();
    }
    int y = words[position++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y;
  }

  private void regenerate() {
    for (int i = 0; i < WORDS; i++) {
      int y = (words[i] & UPPER_MASK) | (words[(i + 1) % WORDS] & LOWER_MASK);
      words[i] = words[(i + SHIFT) % WORDS] ^ (y >>> 1) ^ ((y & 1) != 0 ? MATRIX_A : 0);
    }
    position = 0;
  }

  /** A copy of the state words. */
  public int[] words() {
    return words.clone();
  }

  public int position() {
    return position;
  }

  public Mt19937 copy() {
    return new Mt19937(words.clone(), position);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Mt19937 m && m.position == position && Arrays.equals(m.words, words);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(words) + position;
  }
}
