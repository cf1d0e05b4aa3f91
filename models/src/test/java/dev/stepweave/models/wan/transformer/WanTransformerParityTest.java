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

/** C0 parity of the DiT with diffusers' WanTransformer3DModel on the tiny golden checkpoint. */
class WanTransformerParityTest {
  // The golden README's bound for the DiT output and every tap (float32 CPU against float32 CPU).
  private static final Tolerance TOLERANCE = GoldenBounds.tolerance("dit");
  private static final Set<String> INPUTS =
      Set.of("hidden_states", "timestep", "encoder_hidden_states");

  private final Backend backend = new CpuBackend();

  @Test
  void outputAndEveryTapMatchTheRecording() {
    try (TensorSource weights = TinyWanCheckpoint.transformer().openWeights();
        SafetensorsFile recording = TinyWanCheckpoint.recording()) {
      WanTransformer model = TinyWanCheckpoint.loadModel(weights, backend);

      // In run order, so the report's first failure is the first divergence.
      Map<String, Tensor> produced = new LinkedHashMap<>();
      Tensor out =
          model.forward(
              recording.load("hidden_states"),
              recording.load("timestep"),
              recording.load("encoder_hidden_states"),
              (name, value) -> produced.put(name, backend.download(value)));
      produced.put("out", backend.download(out));

      Set<String> recorded = new TreeSet<>(recording.keys());
      recorded.removeAll(INPUTS);
      assertEquals(recorded, new TreeSet<>(produced.keySet()), "tap names");

      ParityReport report = new ParityReport();
      produced.forEach(
          (name, actual) ->
              report.add(Comparison.of(name, actual, recording.load(name), TOLERANCE)));
      assertTrue(
          report.passed(),
          report.comparisons().stream().map(Comparison::line).collect(Collectors.joining("\n")));
    }
  }
}
