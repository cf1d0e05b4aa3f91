package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link DuplicateUp#addTo}'s one pass through a broadcast view of the input equals adding the
 * copied shortcut, bit for bit, for every pattern of repeats (whole trailing digits of the block,
 * which the view takes, and others, which copy) and for the first chunk, which drops frames.
 */
class DuplicateUpTest {
  private static final CpuBackend CPU = new CpuBackend(2);

  @ParameterizedTest(name = "{0} → {1} channels, time ×{2}, space ×{3}, first chunk {4}")
  @CsvSource({
    "8, 8, 2, 2, false", // repeats 8: every digit dropped (Wan2.2's first up stages)
    "8, 8, 2, 2, true",
    "8, 4, 1, 2, false", // repeats 2: the last space digit dropped (Wan2.2's third up stage)
    "8, 4, 2, 2, false", // repeats 4: both space digits dropped
    "16, 4, 2, 2, false", // repeats 1: no broadcast, only the unfolding
    "4, 6, 2, 2, false", // repeats 12 = 2·2·3, not a product of trailing digits: the copy
  })
  void theSumThroughTheViewEqualsTheCopiedShortcutAdded(
      int in, int out, int time, int space, boolean firstChunk) {
    DuplicateUp up = new DuplicateUp(CPU, in, out, time, space);
    Tensor x = RandomWeights.uniform(1, 1f, 1, in, 3, 4, 5);
    int frames = 3 * time - (firstChunk ? time - 1 : 0);
    Tensor h = RandomWeights.uniform(2, 1f, 1, out, frames, 4 * space, 5 * space);
    Tensor copied = CPU.add(h, up.apply(x, firstChunk));
    Tensor viewed = up.addTo(h, x, firstChunk);
    assertArrayEquals(copied.shape(), viewed.shape());
    assertArrayEquals(copied.toFloatArray(), viewed.toFloatArray());
  }
}
