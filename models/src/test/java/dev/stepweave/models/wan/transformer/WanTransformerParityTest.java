package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** C0 parity of the DiT with diffusers' WanTransformer3DModel on the tiny golden checkpoint. */
class WanTransformerParityTest {
  // The golden README's bound for the DiT output and every tap (float32 CPU against float32 CPU).
  private static final double TOLERANCE = 1e-4;
  private static final Set<String> INPUTS =
      Set.of("hidden_states", "timestep", "encoder_hidden_states");

  private final Backend backend = new CpuBackend();

  @Test
  void outputAndEveryTapMatchTheRecording() {
    try (TensorSource weights = TinyWanCheckpoint.transformer().openWeights();
        SafetensorsFile recording = TinyWanCheckpoint.recording()) {
      WanTransformer model = TinyWanCheckpoint.loadModel(weights, backend);

      Map<String, Tensor> produced = new TreeMap<>();
      Tensor out =
          model.forward(
              recording.load("hidden_states"),
              recording.load("timestep"),
              recording.load("encoder_hidden_states"),
              (name, value) -> produced.put(name, backend.download(value)));
      produced.put("out", backend.download(out));

      Set<String> recorded = new TreeSet<>(recording.keys());
      recorded.removeAll(INPUTS);
      assertEquals(recorded, produced.keySet(), "tap names");
      for (String name : recorded) {
        assertClose(name, recording.load(name), produced.get(name));
      }
    }
  }

  private static void assertClose(String name, Tensor expected, Tensor actual) {
    assertArrayEquals(expected.shape(), actual.shape(), name + " shape");
    float[] e = expected.toFloatArray();
    float[] a = actual.toFloatArray();
    double worst = 0;
    for (int i = 0; i < e.length; i++) {
      worst = Math.max(worst, Math.abs((double) e[i] - a[i]));
    }
    assertTrue(
        worst <= TOLERANCE,
        name + " " + Arrays.toString(expected.shape()) + ": max abs error " + worst);
  }
}
