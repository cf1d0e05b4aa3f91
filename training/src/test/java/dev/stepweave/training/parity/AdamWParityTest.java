package dev.stepweave.training.parity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Three AdamW steps of the flow-matching loss against torch ({@code adamw_3steps}). */
class AdamWParityTest {
  private static final Path EXPECTED = DitTrainParityTest.GOLDEN.resolve("wan21-train-expected");

  @Test
  void threeStepsMatchTorchsAdamW() {
    ParityReport report = new ParityReport();
    long parameters;
    try (SafetensorsFile rec = SafetensorsFile.open(EXPECTED.resolve("adamw_3steps.safetensors"));
        SafetensorsFile dit = SafetensorsFile.open(EXPECTED.resolve("dit_train.safetensors"))) {
      parameters = rec.keys().stream().filter(k -> k.startsWith("param.")).count();
      assertEquals(0.99, TrainingParity.optimizerSettings(rec).beta2(), "settings from metadata");
      new TrainingParity(DitTrainParityTest.GOLDEN.resolve("wan21-tiny"))
          .checkAdamW(rec, dit, report);
    }
    Reports.print(report);
    assertTrue(report.errors().isEmpty(), () -> String.join("\n", report.errors()));
    // the losses, then each parameter's update in relative L2 and where comparable in max abs
    assertEquals(1 + 2 * parameters, report.comparisons().size(), "comparisons");
    assertTrue(report.passed(), () -> Reports.failures(report));
  }
}
