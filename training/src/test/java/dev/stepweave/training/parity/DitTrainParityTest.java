package dev.stepweave.training.parity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The flow-matching loss and the gradient of every DiT parameter and of the input against torch's
 * autograd on the tiny checkpoint ({@code wan21-train-expected/dit_train.safetensors}).
 */
class DitTrainParityTest {
  static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  @Test
  void lossPredictionAndEveryGradientMatchTorch() {
    ParityReport report = new ParityReport();
    long gradients;
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      gradients = rec.keys().stream().filter(k -> k.startsWith("grad.")).count();
      new TrainingParity(GOLDEN.resolve("wan21-tiny")).checkDitTrain(rec, report);
    }
    Reports.print(report);
    assertTrue(report.errors().isEmpty(), () -> String.join("\n", report.errors()));
    // x_t, pred, loss and every recorded gradient
    assertEquals(3 + gradients, report.comparisons().size(), "comparisons");
    assertTrue(report.passed(), () -> Reports.failures(report));
  }
}
