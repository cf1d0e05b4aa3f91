package dev.stepweave.models.clip;

import static dev.stepweave.models.clip.ClipConfigTest.assertOneLine;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The encoder takes every stored tensor by name and shape, and computes its activations right. */
class ClipVisionEncoderLoadingTest {
  private final Backend backend = new CpuBackend(1);

  @TempDir Path dir;

  @Test
  void anUnexpectedTensorFailsNamingFileAndTensor() {
    Path file = edited(t -> t.put("visual_projection.weight", Tensor.zeros(DType.F32, 24, 24)));
    CheckpointException e = assertThrows(CheckpointException.class, () -> load(file));
    assertOneLine(e, file.toString(), "unexpected tensor 'visual_projection.weight'");
  }

  @Test
  void theUnusedPostLayernormMustStillBeThere() {
    Path file = edited(t -> t.remove("post_layernorm.bias"));
    CheckpointException e = assertThrows(CheckpointException.class, () -> load(file));
    assertOneLine(e, file.toString(), "missing tensor 'post_layernorm.bias'");
  }

  @Test
  void theUnusedLastLayerIsCheckedAgainstTheConfig() {
    String name = "encoder.layers.2.mlp.fc1.weight";
    Path file = edited(t -> t.put(name, Tensor.zeros(DType.F32, 40, 24)));
    CheckpointException e = assertThrows(CheckpointException.class, () -> load(file));
    assertOneLine(e, file.toString(), "'" + name + "'", "[40, 24]", "[48, 24]");
  }

  @Test
  void aLayerTheConfigDoesNotHaveFailsAsUnexpected() {
    ClipVisionConfig c = ClipGoldens.config();
    ClipVisionConfig twoLayers =
        new ClipVisionConfig(
            c.hiddenSize(),
            c.intermediateSize(),
            2,
            c.numAttentionHeads(),
            c.imageSize(),
            c.patchSize(),
            c.numChannels(),
            c.layerNormEps(),
            c.hiddenAct());
    try (TensorSource source = ClipGoldens.weights()) {
      CheckpointException e =
          assertThrows(
              CheckpointException.class,
              () -> ClipVisionEncoder.load(twoLayers, new Weights(source, backend, DType.F32)));
      assertOneLine(e, "unexpected tensor 'encoder.layers.2.");
    }
  }

  @Test
  void pixelValuesOfAnotherSizeAreRefused() {
    ClipVisionEncoder encoder = ClipGoldens.encoder(backend);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> encoder.penultimateHiddenState(Tensor.zeros(DType.F32, 1, 3, 16, 16)));
    assertOneLine(e, "[batch, 3, 32, 32]", "[1, 3, 16, 16]");
  }

  @Test
  void quickGeluIsXTimesSigmoidOfScaledX() {
    float[] x = {-4f, -1.5f, -0.25f, 0f, 0.5f, 2f, 6f};
    float[] expected = new float[x.length];
    for (int i = 0; i < x.length; i++) {
      expected[i] = (float) (x[i] / (1 + Math.exp(-1.702 * x[i])));
    }
    Tensor out = ClipVisionConfig.Activation.QUICK_GELU.apply(backend, Tensor.of(x, x.length));
    assertArrayEquals(expected, backend.download(out).toFloatArray(), 1e-6f);
  }

  private ClipVisionEncoder load(Path file) {
    try (TensorSource source = SafetensorsFile.open(file)) {
      return ClipVisionEncoder.load(ClipGoldens.config(), new Weights(source, backend, DType.F32));
    }
  }

  /** The golden encoder's weights with {@code edit} applied, written to a file of this test's. */
  private Path edited(Consumer<Map<String, Tensor>> edit) {
    Map<String, Tensor> tensors = new TreeMap<>();
    try (SafetensorsFile golden =
        SafetensorsFile.open(ClipGoldens.IMAGE_ENCODER.resolve("model.safetensors"))) {
      for (String key : golden.keys()) {
        tensors.put(key, golden.loadF32(key));
      }
    }
    edit.accept(tensors);
    Path file = dir.resolve("model.safetensors");
    Safetensors.write(file, tensors, null);
    return file;
  }
}
