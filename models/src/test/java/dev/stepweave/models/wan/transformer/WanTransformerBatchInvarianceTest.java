package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * A sample's prediction must not depend on what it is batched with: the engine batches requests at
 * step granularity and promises bit-identical results to running them one by one — with image
 * states and with per-token timesteps too.
 */
class WanTransformerBatchInvarianceTest {
  private static final String IMAGE_STATES = "encoder_hidden_states_image";

  private final Backend backend = new CpuBackend();

  @Test
  void eachSampleOfABatchEqualsThatSampleRunAlone() {
    checkEachSampleAlone(TinyWanCheckpoint.T2V);
  }

  @Test
  void eachSampleWithItsImageStatesEqualsThatSampleRunAlone() {
    checkEachSampleAlone(TinyWanCheckpoint.I2V);
  }

  @Test
  void eachSampleWithItsPerTokenTimestepsEqualsThatSampleRunAlone() {
    checkEachSampleAlone(TinyWanCheckpoint.TI2V);
  }

  private void checkEachSampleAlone(String checkpoint) {
    try (TensorSource weights = TinyWanCheckpoint.transformer(checkpoint).openWeights();
        SafetensorsFile recording = TinyWanCheckpoint.recording(checkpoint)) {
      WanTransformer model = TinyWanCheckpoint.loadModel(checkpoint, weights, backend);
      Tensor latents = recording.load("hidden_states");
      Tensor timesteps = recording.load("timestep");
      Tensor text = recording.load("encoder_hidden_states");
      Tensor image = recording.keys().contains(IMAGE_STATES) ? recording.load(IMAGE_STATES) : null;

      Tensor batched =
          backend.download(model.forward(latents, timesteps, text, image, TapSink.NONE));

      float[][] rows = new float[latents.dim(0)][];
      for (int i = 0; i < latents.dim(0); i++) {
        Tensor alone =
            model.forward(
                latents.slice(0, i, i + 1),
                timesteps.slice(0, i, i + 1),
                text.slice(0, i, i + 1),
                image == null ? null : image.slice(0, i, i + 1),
                TapSink.NONE);
        rows[i] = backend.download(alone).toFloatArray();
        assertArrayEquals(batched.slice(0, i, i + 1).toFloatArray(), rows[i], "sample " + i);
      }
      // The recordings' rows differ (other timesteps, other states), so equal rows would mean the
      // batch leaked one row into another rather than each row being its own.
      assertFalse(Arrays.equals(rows[0], rows[1]), "the two samples' predictions differ");
    }
  }
}
