package dev.stepweave.training.parity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The VAE reconstruction loss and the gradient of every VAE parameter against torch ({@code
 * vae_train}: a 5-frame 16×16 video through the serving encoder and decoder).
 */
class VaeTrainParityTest {
  private static final Path EXPECTED = DitTrainParityTest.GOLDEN.resolve("wan21-train-expected");

  @Test
  void reconstructionLossAndEveryGradientMatchTorch() {
    ParityReport report = new ParityReport();
    long gradients;
    try (SafetensorsFile rec = SafetensorsFile.open(EXPECTED.resolve("vae_train.safetensors"))) {
      gradients = rec.keys().stream().filter(k -> k.startsWith("grad.")).count();
      new TrainingParity(DitTrainParityTest.GOLDEN.resolve("wan21-tiny"))
          .checkVaeTrain(rec, report);
    }
    Reports.print(report);
    assertTrue(report.errors().isEmpty(), () -> String.join("\n", report.errors()));
    assertEquals(2 + gradients, report.comparisons().size(), "reconstruction, loss, gradients");
    assertTrue(report.passed(), () -> Reports.failures(report));
  }
}
