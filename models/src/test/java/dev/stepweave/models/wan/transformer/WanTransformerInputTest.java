package dev.stepweave.models.wan.transformer;

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
    try (TensorSource weights = TinyWanCheckpoint.transformer().openWeights()) {
      WanTransformer model = TinyWanCheckpoint.loadModel(weights, backend);
      return assertThrows(
              IllegalArgumentException.class,
              () -> model.forward(latents, timesteps, text, TapSink.NONE))
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
}
