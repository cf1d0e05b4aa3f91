package dev.stepweave.training.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.InMemoryTensors;
import dev.stepweave.tensor.io.TensorSource;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The VAE derives {@code γ·√C} from each norm's γ at load, so an optimiser's in-place update of γ
 * alone would leave the forward computing with the old value. {@link TrainableVae#reloaded} loads
 * it again from the updated parameters: it then computes exactly what a VAE freshly loaded from
 * them computes.
 */
class TrainableVaeReloadTest {
  private static final Path TINY =
      Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny");

  @Test
  void aReloadedVaeComputesWithItsUpdatedParameters() {
    DiffusersDirectory.Component component = DiffusersDirectory.open(TINY).component("vae");
    WanVaeConfig cfg = WanVaeConfig.fromJson(component.config());
    try (TensorSource weights = component.openWeights()) {
      TrainableVae vae = TrainableVae.load(cfg, weights, new CpuBackend(2));
      Tensor video = video();
      // An optimiser step, in place: every norm's γ doubles.
      Map<String, Tensor> parameters = vae.parameters();
      int scaled = 0;
      for (Map.Entry<String, Tensor> e : parameters.entrySet()) {
        if (e.getKey().endsWith(".gamma")) {
          var seg = e.getValue().segment();
          for (long i = 0; i < e.getValue().numel(); i++) {
            seg.setAtIndex(
                ValueLayout.JAVA_FLOAT_UNALIGNED,
                i,
                2 * seg.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i));
          }
          scaled++;
        }
      }
      assertTrue(scaled > 0, "the tiny VAE has norms");

      float stale = vae.reconstructionStep(video).loss();
      TrainableVae reloaded = vae.reloaded();
      float fresh =
          TrainableVae.load(cfg, new InMemoryTensors(parameters, "updated"), new CpuBackend(2))
              .reconstructionStep(video)
              .loss();

      assertNotSame(vae, reloaded);
      assertEquals(fresh, reloaded.reconstructionStep(video).loss());
      assertNotEquals(fresh, stale, "without the reload the update of γ would not count");
      assertArrayEquals(
          parameters.get(parameters.keySet().iterator().next()).toFloatArray(),
          reloaded.parameters().get(parameters.keySet().iterator().next()).toFloatArray());
    }
  }

  /** A 5-frame 16×16 clip of smooth values in [-1, 1]. */
  private static Tensor video() {
    int f = 5;
    int h = 16;
    int w = 16;
    float[] v = new float[3 * f * h * w];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) Math.sin(i * 0.37);
    }
    return Tensor.of(v, 1, 3, f, h, w);
  }
}
