package dev.stepweave.training.parity;

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
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      new TrainingParity(GOLDEN.resolve("wan21-tiny")).checkDitTrain(rec, report);
    }
    Reports.print(report);
    assertTrue(report.errors().isEmpty(), () -> String.join("\n", report.errors()));
    assertTrue(report.comparisons().size() > 70, "every parameter's gradient was compared");
    assertTrue(report.passed(), () -> Reports.failures(report));
  }
}
