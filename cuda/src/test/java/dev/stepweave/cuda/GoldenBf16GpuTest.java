package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.models.parity.RecordingVerifier;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The golden parity suite in the BF16 performance mode (BF16 transformer and text-encoder weights,
 * BF16 DiT activations, tensor-core attention and convolutions; the VAE's activations F32): every
 * recorded output within relative L2 1e-2 of the F32 reference (issue 5's bound for this mode).
 */
@Tag("gpu")
class GoldenBf16GpuTest {
  private static final Path GOLDEN =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"));
  private static final double BOUND = 1e-2;

  @Test
  void everyGoldenRecordingIsWithinTheBf16Bound() {
    assertWithinBound("wan21-tiny", 30);
  }

  /** The LoRA recordings: each adapter alone, both stacked, none, and the whole pipeline. */
  @Test
  void theLoraRecordingsAreWithinTheBf16Bound() {
    assertWithinBound("wan21-lora-tiny", 6);
  }

  /** The two-expert pipeline, each expert's steps on its own transformer. */
  @Test
  void theTwoExpertPipelineIsWithinTheBf16Bound() {
    assertWithinBound("wan22-moe-tiny", 5);
  }

  /** Image-to-video: the CLIP encoder, the image-token DiT and the whole I2V pipeline. */
  @Test
  void theImageToVideoRecordingsAreWithinTheBf16Bound() {
    assertWithinBound("wan21-i2v-tiny", 10);
  }

  /** Wan2.2 TI2V: per-token timesteps, the residual VAE, both pipelines (text, and image first). */
  @Test
  void theTi2vRecordingsAreWithinTheBf16Bound() {
    assertWithinBound("wan22-ti2v-tiny", 14);
  }

  private static void assertWithinBound(String set, int atLeast) {
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve(set), Gpu.bf16(), System.out::println)
            .verify(GOLDEN.resolve(set + "-expected"), c -> {});
    assertEquals(List.of(), report.errors());
    double worst = 0;
    String worstName = "";
    for (Comparison c : report.comparisons()) {
      System.out.printf("  %-48s rel L2 %.2e (bound %.0e)%n", c.name(), c.relativeL2Error(), BOUND);
      if (c.relativeL2Error() > worst) {
        worst = c.relativeL2Error();
        worstName = c.name();
      }
    }
    assertTrue(
        report.comparisons().size() >= atLeast, "comparisons: " + report.comparisons().size());
    assertTrue(worst <= BOUND, worstName + ": relative L2 " + worst);
  }
}
