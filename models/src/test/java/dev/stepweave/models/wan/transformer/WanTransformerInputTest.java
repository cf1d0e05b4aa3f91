package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.TensorSource;
import org.junit.jupiter.api.Test;

/** Inputs that do not fit the config fail before any compute, naming the offending input. */
class WanTransformerInputTest {
  private final Backend backend = new CpuBackend();

  private String rejection(Tensor latents, Tensor timesteps, Tensor text) {
    return rejection(TinyWanCheckpoint.T2V, latents, timesteps, text, null);
  }

  private String rejection(
      String checkpoint, Tensor latents, Tensor timesteps, Tensor text, Tensor image) {
    try (TensorSource weights = TinyWanCheckpoint.transformer(checkpoint).openWeights()) {
      WanTransformer model = TinyWanCheckpoint.loadModel(checkpoint, weights, backend);
      return assertThrows(
              IllegalArgumentException.class,
              () -> model.forward(latents, timesteps, text, image, TapSink.NONE))
          .getMessage();
    }
  }

  @Test
  void latentsWhoseSizeIsNotAMultipleOfThePatchAreRejected() {
    String message =
        rejection(
            Tensor.zeros(DType.F32, 1, 16, 3, 5, 8),
            Tensor.of(new float[] {500f}, 1),
            Tensor.zeros(DType.F32, 1, 4, 24));
    assertTrue(message.startsWith("hidden_states [1, 16, 3, 5, 8]"), message);
  }

  @Test
  void integerTimestepsAreRejected() {
    String message =
        rejection(
            Tensor.zeros(DType.F32, 1, 16, 3, 6, 8),
            Tensor.ofLongs(new long[] {500}, 1),
            Tensor.zeros(DType.F32, 1, 4, 24));
    assertTrue(message.startsWith("timestep I64[1] must be float"), message);
  }

  @Test
  void textOfTheWrongWidthIsRejected() {
    String message =
        rejection(
            Tensor.zeros(DType.F32, 1, 16, 3, 6, 8),
            Tensor.of(new float[] {500f}, 1),
            Tensor.zeros(DType.F32, 1, 4, 32));
    assertTrue(message.startsWith("encoder_hidden_states [1, 4, 32]"), message);
  }

  @Test
  void perTokenTimestepsMustCoverEveryPatch() {
    // [1, 16, 3, 6, 8] patchifies into 3·3·4 = 36 tokens.
    String message =
        rejection(
            Tensor.zeros(DType.F32, 1, 16, 3, 6, 8),
            Tensor.zeros(DType.F32, 1, 35),
            Tensor.zeros(DType.F32, 1, 4, 24));
    assertEquals(
        "timestep F32[1, 35] must be float [1] (one per sample) or [1, 36] (one per token)",
        message);
  }

  @Test
  void anImageConditionedTransformerNeedsImageStates() {
    String message =
        rejection(
            TinyWanCheckpoint.I2V,
            Tensor.zeros(DType.F32, 1, 36, 1, 4, 4),
            Tensor.of(new float[] {500f}, 1),
            Tensor.zeros(DType.F32, 1, 4, 22),
            null);
    assertEquals(
        "encoder_hidden_states_image is required: the transformer is image-conditioned (image_dim"
            + " 24)",
        message);
  }

  @Test
  void imageStatesOfTheWrongShapeAreRejected() {
    String message =
        rejection(
            TinyWanCheckpoint.I2V,
            Tensor.zeros(DType.F32, 2, 36, 1, 4, 4),
            Tensor.of(new float[] {500f, 500f}, 2),
            Tensor.zeros(DType.F32, 2, 4, 22),
            Tensor.zeros(DType.F32, 1, 5, 24));
    assertEquals("encoder_hidden_states_image [1, 5, 24] must be [2, S, 24]", message);
  }

  @Test
  void imageStatesForATextOnlyTransformerAreRejected() {
    String message =
        rejection(
            TinyWanCheckpoint.T2V,
            Tensor.zeros(DType.F32, 1, 16, 3, 6, 8),
            Tensor.of(new float[] {500f}, 1),
            Tensor.zeros(DType.F32, 1, 4, 24),
            Tensor.zeros(DType.F32, 1, 5, 24));
    assertEquals(
        "encoder_hidden_states_image [1, 5, 24] given to a transformer without image conditioning"
            + " (no image_dim)",
        message);
  }
}
