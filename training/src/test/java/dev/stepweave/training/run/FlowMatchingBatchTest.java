package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.data.LatentSample;
import dev.stepweave.training.objective.FlowMatching;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A flow-matching step's batch, whose rows are drawn in parallel, has the bits of drawing them one
 * after another from the step's stream — noise levels, caption dropouts, noise — and leaves the
 * stream where drawing them in order would: a run's draws (and so its resumption and the shipped
 * weights' reproduction) do not depend on the thread count.
 */
class FlowMatchingBatchTest {
  private static final double SHIFT = 3.0;
  private static final double DROPOUT = 0.3;

  /** Samples with latents of an odd size (the last gaussian pair is half used). */
  private static TrainingData.Latents data(int count) {
    List<LatentSample> samples = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      float[] latents = new float[15];
      float[] text = new float[6];
      for (int j = 0; j < latents.length; j++) {
        latents[j] = i * 100 + j;
      }
      Arrays.fill(text, i + 0.5f);
      samples.add(
          new LatentSample(
              "s" + i, "caption " + i, Tensor.of(latents, 1, 3, 1, 1, 5), Tensor.of(text, 2, 3)));
    }
    return new TrainingData.Latents(samples, Tensor.of(new float[6], 2, 3), "test", "0");
  }

  @Test
  void theParallelBatchIsTheInOrderOne() {
    TrainingData.Latents data = data(5);
    List<Integer> rows = List.of(3, 0, 4, 4, 1, 2, 0, 3, 1, 2, 4, 0);
    StepDraws parallel = new StepDraws(7, 11);
    StepDraws inOrder = new StepDraws(7, 11);
    for (int microBatch = 0; microBatch < 2; microBatch++) {
      FlowMatching.Batch got =
          FlowMatchingComponent.batch(data, rows, parallel, NoiseLevels.shifted(SHIFT), DROPOUT);
      int n = rows.size();
      float[] sigma = new float[n];
      List<Float> x0 = new ArrayList<>(), noise = new ArrayList<>(), context = new ArrayList<>();
      int dropped = 0;
      for (int row = 0; row < n; row++) {
        LatentSample s = data.samples().get(rows.get(row));
        double u = inOrder.uniform();
        sigma[row] = (float) (SHIFT * u / (1 + (SHIFT - 1) * u));
        boolean drop = inOrder.uniform() < DROPOUT;
        dropped += drop ? 1 : 0;
        for (float v : s.latents().toFloatArray()) x0.add(v);
        for (float v : inOrder.gaussians(15)) noise.add(v);
        for (float v : (drop ? data.negative() : s.promptEmbeds()).toFloatArray()) context.add(v);
      }
      assertArrayEquals(sigma, got.sigma().toFloatArray());
      assertArrayEquals(floats(x0), got.x0().toFloatArray());
      assertArrayEquals(floats(noise), got.noise().toFloatArray());
      assertArrayEquals(floats(context), got.context().toFloatArray());
      assertTrue(dropped > 0 && dropped < n, "some captions drop, not all: " + dropped);
    }
    assertEquals(inOrder.uniform(), parallel.uniform(), "the stream goes on from the same place");
  }

  private static float[] floats(List<Float> values) {
    float[] out = new float[values.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = values.get(i);
    }
    return out;
  }
}
