package dev.stepweave.models.text;

import dev.stepweave.tensor.Tensor;
import java.nio.file.Path;
import java.util.Arrays;

/** Locations of the reference recordings and the comparison the parity tests share. */
final class TextGoldens {
  private TextGoldens() {}

  static Path root() {
    return Path.of(System.getProperty("stepweave.golden", "testdata/golden"));
  }

  static Path checkpoint() {
    return root().resolve("wan21-tiny");
  }

  static Path expected(String file) {
    return root().resolve("wan21-tiny-expected").resolve(file);
  }

  static float maxAbsDiff(Tensor actual, Tensor expected) {
    if (!Arrays.equals(actual.shape(), expected.shape())) {
      throw new AssertionError(
          "shape "
              + Arrays.toString(actual.shape())
              + " differs from expected "
              + Arrays.toString(expected.shape()));
    }
    float[] a = actual.toFloatArray();
    float[] e = expected.toFloatArray();
    float max = 0;
    for (int i = 0; i < a.length; i++) {
      float d = Math.abs(a[i] - e[i]);
      if (!(d <= max)) {
        max = d; // NaN propagates so a NaN result fails every bound
      }
    }
    return max;
  }
}
