package dev.stepweave.models.wan.embedded;

import dev.stepweave.tensor.Tensor;
import java.nio.charset.StandardCharsets;

/**
 * Fills a {@link TensorSpec} with pseudo-random values that depend only on the tensor's name and a
 * fixed seed, so every machine and JVM writes the same bytes. The generator is SplitMix64, written
 * out here rather than borrowed from the JDK so its stream can never change under us, and the
 * distribution is uniform because that needs no transcendental functions (whose last bit may vary
 * between platforms).
 */
final class SeededValues {
  private static final long GOLDEN_GAMMA = 0x9e3779b97f4a7c15L;
  private static final double SQRT3 = Math.sqrt(3);

  private final long seed;

  SeededValues(long seed) {
    this.seed = seed;
  }

  /** A contiguous F32 CPU tensor of {@code spec}'s shape and distribution. */
  Tensor materialise(TensorSpec spec) {
    float[] values = new float[Math.toIntExact(Tensor.numel(spec.shape()))];
    long state = seed ^ fnv1a(spec.name());
    // Uniform on [-sqrt(3), sqrt(3)) has unit variance.
    for (int i = 0; i < values.length; i++) {
      state += GOLDEN_GAMMA;
      double unit = (mix(state) >>> 11) * 0x1.0p-53;
      values[i] = (float) (spec.mean() + spec.std() * SQRT3 * (2 * unit - 1));
    }
    if (spec.smoothSpatial()) {
      blurSpatially(values);
    }
    return Tensor.of(values, spec.shape());
  }

  /** The 3×3 binomial blur, weights summing to 1: a smooth signal passes at its own scale. */
  private static final float[] BLUR = {
    1 / 16f, 2 / 16f, 1 / 16f, 2 / 16f, 4 / 16f, 2 / 16f, 1 / 16f, 2 / 16f, 1 / 16f
  };

  /** Replaces each 3×3 block by its first value times the blur. */
  private static void blurSpatially(float[] values) {
    for (int block = 0; block < values.length; block += 9) {
      float scale = values[block];
      for (int k = 0; k < 9; k++) {
        values[block + k] = scale * BLUR[k];
      }
    }
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  private static long fnv1a(String name) {
    long hash = 0xcbf29ce484222325L;
    for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
      hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
    }
    return hash;
  }
}
