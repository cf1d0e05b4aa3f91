package dev.stepweave.tensor.rng;

import java.util.Arrays;
import java.util.Objects;

/**
 * A snapshot of a {@link TorchGenerator}: everything torch's CPU generator keeps that randn reads
 * or writes. Immutable; {@link #toLongArray()} / {@link #fromLongArray(long[])} give a flat form
 * for checkpoints.
 *
 * @param initialSeed the seed passed to {@code manual_seed}
 * @param mtWords the 624 Mersenne Twister state words
 * @param mtPosition index of the next word to use (624: regenerate first)
 * @param cachedNormal the second value of the last scalar Box–Muller pair, not yet returned; torch
 *     keeps it in the generator, so the next small randn starts with it
 */
public record TorchGeneratorState(
    long initialSeed, int[] mtWords, int mtPosition, Double cachedNormal) {

  private static final long FORMAT = 1;
  private static final int HEADER = 5;

  public TorchGeneratorState {
    if (mtWords.length != Mt19937.WORDS) {
      throw new IllegalArgumentException(
          "generator state needs " + Mt19937.WORDS + " MT words, got " + mtWords.length);
    }
    mtWords = mtWords.clone();
  }

  @Override
  public int[] mtWords() {
    return mtWords.clone();
  }

  /** {@code [format, seed, position, hasCached, cachedBits, word0 … word623]}. */
  public long[] toLongArray() {
    long[] out = new long[HEADER + Mt19937.WORDS];
    out[0] = FORMAT;
    out[1] = initialSeed;
    out[2] = mtPosition;
    out[3] = cachedNormal == null ? 0 : 1;
    out[4] = cachedNormal == null ? 0 : Double.doubleToRawLongBits(cachedNormal);
    for (int i = 0; i < Mt19937.WORDS; i++) {
      out[HEADER + i] = Integer.toUnsignedLong(mtWords[i]);
    }
    return out;
  }

  /**
   * Parses {@link #toLongArray()}'s form.
   *
   * @throws IllegalArgumentException naming what is malformed
   */
  public static TorchGeneratorState fromLongArray(long[] flat) {
    if (flat.length != HEADER + Mt19937.WORDS || flat[0] != FORMAT) {
      throw new IllegalArgumentException(
          "not a torch generator state: expected "
              + (HEADER + Mt19937.WORDS)
              + " longs of format "
              + FORMAT
              + ", got "
              + flat.length
              + (flat.length > 0 ? " of format " + flat[0] : ""));
    }
    int[] words = new int[Mt19937.WORDS];
    for (int i = 0; i < words.length; i++) {
      words[i] = (int) flat[HEADER + i];
    }
    Double cached = flat[3] != 0 ? Double.longBitsToDouble(flat[4]) : null;
    return new TorchGeneratorState(flat[1], words, Math.toIntExact(flat[2]), cached);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TorchGeneratorState s
        && s.initialSeed == initialSeed
        && s.mtPosition == mtPosition
        && Arrays.equals(s.mtWords, mtWords)
        && Objects.equals(s.cachedNormal, cachedNormal);
  }

  @Override
  public int hashCode() {
    return Objects.hash(initialSeed, mtPosition, Arrays.hashCode(mtWords), cachedNormal);
  }

  @Override
  public String toString() {
    return "TorchGeneratorState[seed="
        + initialSeed
        + ", position="
        + mtPosition
        + ", cachedNormal="
        + cachedNormal
        + "]";
  }
}
