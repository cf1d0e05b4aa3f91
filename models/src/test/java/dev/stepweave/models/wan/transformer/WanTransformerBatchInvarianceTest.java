package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import org.junit.jupiter.api.Test;

/**
 * A sample's prediction must not depend on what it is batched with: the engine batches requests at
 * step granularity and promises bit-identical results to running them one by one.
 */
class WanTransformerBatchInvarianceTest {
  private final Backend backend = new CpuBackend();

  @Test
  void eachSampleOfABatchEqualsThatSampleRunAlone() {
    try (TensorSource weights = TinyWanCheckpoint.transformer().openWeights();
        SafetensorsFile recording = TinyWanCheckpoint.recording()) {
      WanTransformer model = TinyWanCheckpoint.loadModel(weights, backend);
      Tensor latents = recording.load("hidden_states");
      Tensor timesteps = recording.load("timestep");
      Tensor text = recording.load("encoder_hidden_states");

      Tensor batched = backend.download(model.forward(latents, timesteps, text, TapSink.NONE));

      for (int i = 0; i < latents.dim(0); i++) {
        Tensor alone =
            model.forward(
                latents.slice(0, i, i + 1),
                timesteps.slice(0, i, i + 1),
                text.slice(0, i, i + 1),
                TapSink.NONE);
        assertArrayEquals(
            batched.slice(0, i, i + 1).toFloatArray(),
            backend.download(alone).toFloatArray(),
            "sample " + i);
      }
    }
  }
}
