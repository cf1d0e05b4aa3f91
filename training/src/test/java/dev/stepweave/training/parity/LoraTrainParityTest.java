package dev.stepweave.training.parity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * LoRA-only gradients with the base weights frozen against torch ({@code lora_train}: adapter A of
 * {@code wan21-lora-tiny} at strength 1).
 */
class LoraTrainParityTest {
  private static final Path EXPECTED = DitTrainParityTest.GOLDEN.resolve("wan21-train-expected");

  @Test
  void lossAndEveryFactorsGradientMatchTorch() {
    ParityReport report = new ParityReport();
    long gradients;
    try (SafetensorsFile rec = SafetensorsFile.open(EXPECTED.resolve("lora_train.safetensors"));
        SafetensorsFile dit = SafetensorsFile.open(EXPECTED.resolve("dit_train.safetensors"))) {
      gradients = rec.keys().stream().filter(k -> k.startsWith("grad.")).count();
      new TrainingParity(DitTrainParityTest.GOLDEN.resolve("wan21-lora-tiny"))
          .checkLoraTrain(rec, dit, report);
    }
    Reports.print(report);
    assertTrue(report.errors().isEmpty(), () -> String.join("\n", report.errors()));
    assertEquals(1 + gradients, report.comparisons().size(), "the loss and every gradient");
    assertTrue(report.passed(), () -> Reports.failures(report));
  }
}
