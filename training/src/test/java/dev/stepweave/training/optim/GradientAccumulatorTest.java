package dev.stepweave.training.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.autograd.StandInDevice;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What the accumulator hands on: one micro-batch's device gradients themselves (no scaled copy of a
 * model's worth of them), several micro-batches' sums by share, and an error for shares that do not
 * make a whole batch.
 */
class GradientAccumulatorTest {
  private final StandInDevice device = new StandInDevice();

  private Map<String, Tensor> gradients(float... values) {
    return Map.of("w", device.upload(Tensor.of(values, values.length), DType.F32));
  }

  @Test
  void oneMicroBatchHandsItsDeviceGradientsOn() {
    Map<String, Tensor> g = gradients(1f, -2f, 3f);
    GradientAccumulator accumulator = new GradientAccumulator(device);
    accumulator.add(g, 1);
    assertSame(g.get("w"), accumulator.total().get("w"));
  }

  @Test
  void twoMicroBatchesAreSummedByShareIntoFreshTensors() {
    Map<String, Tensor> a = gradients(1f, -2f, 3f);
    Map<String, Tensor> b = gradients(3f, 2f, 1f);
    GradientAccumulator accumulator = new GradientAccumulator(device);
    accumulator.add(a, 0.25);
    accumulator.add(b, 0.75);
    Tensor total = accumulator.total().get("w");
    assertNotSame(a.get("w"), total);
    assertArrayEquals(new float[] {2.5f, 1f, 1.5f}, device.download(total).toFloatArray());
    assertArrayEquals(new float[] {1f, -2f, 3f}, device.download(a.get("w")).toFloatArray());
  }

  @Test
  void sharesThatAreNotTheWholeBatchAreRefused() {
    GradientAccumulator accumulator = new GradientAccumulator(device);
    accumulator.add(gradients(1f), 0.5);
    assertThrows(IllegalStateException.class, accumulator::total);
  }
}
