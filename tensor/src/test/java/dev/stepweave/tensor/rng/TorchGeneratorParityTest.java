package dev.stepweave.tensor.rng;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** torch.randn parity against the recorded torch_cpu_randn.safetensors, every key, bit for bit. */
class TorchGeneratorParityTest {
  private static final Pattern KEY = Pattern.compile("seed(\\d+)_([0-9x]+)");

  private static Path golden() {
    return Path.of(System.getProperty("stepweave.golden"))
        .resolve("wan21-tiny-expected/torch_cpu_randn.safetensors");
  }

  @Test
  void everyRecordedDrawMatchesTorchExactly() {
    try (SafetensorsFile file = SafetensorsFile.open(golden())) {
      int checked = 0;
      boolean sawScalarPath = false;
      boolean sawRaggedBlockPath = false;
      for (String key : file.keys()) {
        Matcher m = KEY.matcher(key);
        assertTrue(m.matches(), "unexpected key " + key);
        long seed = Long.parseLong(m.group(1));
        int[] shape = Arrays.stream(m.group(2).split("x")).mapToInt(Integer::parseInt).toArray();
        Tensor expected = file.load(key);
        assertArrayEquals(expected.shape(), shape, key);

        float[] actual = TorchGenerator.seeded(seed).randn(shape).toFloatArray();

        assertArrayEquals(expected.toFloatArray(), actual, 0f, key);
        long n = Tensor.numel(shape);
        sawScalarPath |= n < 16;
        sawRaggedBlockPath |= n > 16 && n % 16 != 0;
        checked++;
      }
      assertTrue(checked >= 12, "only " + checked + " recorded draws");
      assertTrue(sawScalarPath && sawRaggedBlockPath, "golden lacks a path");
    }
  }

  @Test
  void restoredStateRepeatsTheSameDrawsIncludingTheCachedNormal() {
    TorchGenerator g = TorchGenerator.seeded(42);
    g.randn(7); // odd count: leaves the second value of a Box–Muller pair cached
    TorchGeneratorState saved = g.state();
    assertTrue(saved.cachedNormal() != null);
    float[] small = g.randn(3).toFloatArray();
    float[] big = g.randn(2, 21).toFloatArray();

    TorchGenerator resumed =
        TorchGenerator.fromState(TorchGeneratorState.fromLongArray(saved.toLongArray()));
    assertArrayEquals(small, resumed.randn(3).toFloatArray(), 0f);
    assertArrayEquals(big, resumed.randn(2, 21).toFloatArray(), 0f);
    assertEquals(g.state(), resumed.state());
  }

  @Test
  void consecutiveSmallDrawsContinueOneStream() {
    // torch: randn(7) twice equals randn(14) split in two, because the pair cache carries over.
    TorchGenerator g = TorchGenerator.seeded(0);
    float[] joined = new float[14];
    System.arraycopy(g.randn(7).toFloatArray(), 0, joined, 0, 7);
    System.arraycopy(g.randn(7).toFloatArray(), 0, joined, 7, 7);
    assertArrayEquals(TorchGenerator.seeded(0).randn(14).toFloatArray(), joined, 0f);
  }

  @Test
  void seedsUseOnlyTheirLow32Bits() {
    assertEquals(
        TorchGenerator.seeded(5).state().toLongArray()[5],
        TorchGenerator.seeded(5 + (1L << 32)).state().toLongArray()[5]);
    assertFalse(
        Arrays.equals(
            TorchGenerator.seeded(5).randn(4).toFloatArray(),
            TorchGenerator.seeded(6).randn(4).toFloatArray()));
  }
}
