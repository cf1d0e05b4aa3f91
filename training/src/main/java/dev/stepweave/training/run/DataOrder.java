package dev.stepweave.training.run;

import dev.stepweave.training.shapes.SplitMix64;

/**
 * The order a run reads its samples in: epoch after epoch, each a Fisher–Yates shuffle drawn from
 * the seed and the epoch's number. The sample at data position p is a pure function of (seed, p),
 * so a resumed run needs only its position.
 */
final class DataOrder {
  private static final long ORDER_STREAM = 0x4f52_4445_5253_4545L;

  private final long seed;
  private final int size;
  private long epoch = -1;
  private int[] permutation;

  DataOrder(long seed, int size) {
    if (size < 1) {
      throw new IllegalArgumentException("a dataset of " + size + " samples cannot be read");
    }
    this.seed = seed;
    this.size = size;
  }

  /** The sample index at data position {@code position} (samples read so far). */
  int sampleAt(long position) {
    long e = position / size;
    if (e != epoch) {
      permutation = shuffle(e);
      epoch = e;
    }
    return permutation[(int) (position % size)];
  }

  private int[] shuffle(long e) {
    SplitMix64 random = new SplitMix64(SplitMix64.mix(seed ^ ORDER_STREAM) ^ SplitMix64.mix(e + 1));
    int[] p = new int[size];
    for (int i = 0; i < size; i++) {
      p[i] = i;
    }
    for (int i = size - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    return p;
  }
}
