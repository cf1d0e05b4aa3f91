package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.models.parity.RecordingVerifier;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The golden parity suite (DiT with every tap, UMT5, VAE encode/decode, samplers, the whole
 * pipeline) through the CUDA backend in F32, within the golden tolerances.
 */
@Tag("gpu")
class GoldenParityGpuTest {
  private static final Path GOLDEN =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"));

  @Test
  void everyGoldenRecordingMatchesOnTheGpu() {
    CudaBackend gpu = Gpu.backend();
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan21-tiny"), gpu, System.out::println)
            .verify(
                GOLDEN.resolve("wan21-tiny-expected"), c -> System.out.println("  " + c.line()));
    assertEquals(List.of(), report.errors());
    assertTrue(report.passed(), () -> "first divergence: " + report.firstDivergence());
  }
}
