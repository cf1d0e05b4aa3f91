package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * C0 parity of the DiT with diffusers' WanTransformer3DModel on the tiny golden checkpoints: Wan2.1
 * T2V (output and every tap), Wan2.1 I2V (image tokens) and Wan2.2 TI2V (per-token timesteps).
 */
class WanTransformerParityTest {
  // The golden README's bound for the DiT output and every tap (float32 CPU against float32 CPU).
  private static final Tolerance TOLERANCE = GoldenBounds.tolerance("dit");
  private static final String IMAGE_STATES = "encoder_hidden_states_image";
  private static final Set<String> INPUTS =
      Set.of("hidden_states", "timestep", "encoder_hidden_states", IMAGE_STATES);

  private final Backend backend = new CpuBackend();

  @Test
  void textToVideoOutputAndEveryTapMatchTheRecording() {
    Map<String, Tensor> produced = new LinkedHashMap<>();
    Set<String> recorded = check(TinyWanCheckpoint.T2V, produced);
    assertEquals(recorded, new TreeSet<>(produced.keySet()), "tap names");
  }

  @Test
  void imageToVideoWithImageTokensMatchesTheRecording() {
    Map<String, Tensor> produced = new LinkedHashMap<>();
    check(TinyWanCheckpoint.I2V, produced);
    assertTrue(produced.containsKey("image_context"), "the image tokens were embedded");
  }

  @Test
  void perTokenTimestepsMatchTheRecording() {
    try (SafetensorsFile recording = TinyWanCheckpoint.recording(TinyWanCheckpoint.TI2V)) {
      assertEquals(2, recording.load("timestep").rank(), "the recording's timesteps are per token");
    }
    check(TinyWanCheckpoint.TI2V, new LinkedHashMap<>());
  }

  /**
   * Runs {@code checkpoint}'s transformer on its recording's inputs, compares every recorded output
   * and tap and returns their names.
   */
  private Set<String> check(String checkpoint, Map<String, Tensor> produced) {
    try (TensorSource weights = TinyWanCheckpoint.transformer(checkpoint).openWeights();
        SafetensorsFile recording = TinyWanCheckpoint.recording(checkpoint)) {
      WanTransformer model = TinyWanCheckpoint.loadModel(checkpoint, weights, backend);

      // In run order, so the report's first failure is the first divergence.
      Tensor out =
          model.forward(
              recording.load("hidden_states"),
              recording.load("timestep"),
              recording.load("encoder_hidden_states"),
              recording.keys().contains(IMAGE_STATES) ? recording.load(IMAGE_STATES) : null,
              (name, value) -> produced.put(name, backend.download(value)));
      produced.put("out", backend.download(out));

      Set<String> recorded = new TreeSet<>(recording.keys());
      recorded.removeAll(INPUTS);
      assertTrue(
          produced.keySet().containsAll(recorded),
          "recorded " + recorded + ", produced " + produced.keySet());

      ParityReport report = new ParityReport();
      produced.forEach(
          (name, actual) -> {
            if (recorded.contains(name)) {
              report.add(Comparison.of(name, actual, recording.load(name), TOLERANCE));
            }
          });
      String lines =
          report.comparisons().stream().map(Comparison::line).collect(Collectors.joining("\n"));
      assertTrue(report.passed(), checkpoint + "\n" + lines);
      return recorded;
    }
  }
}
