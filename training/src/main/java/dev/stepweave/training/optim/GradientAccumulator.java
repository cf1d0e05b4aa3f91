package dev.stepweave.training.optim;

import dev.stepweave.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Gradient accumulation: the gradients of several micro-batches, each weighted by its share of the
 * whole batch, summed — so a mean loss over a batch too large for one pass gets exactly the
 * gradient of that batch (up to float summation order).
 */
public final class GradientAccumulator {
  private final Map<String, float[]> sums = new LinkedHashMap<>();
  private final Map<String, int[]> shapes = new LinkedHashMap<>();
  private double weights;

  /** Adds {@code gradients} (of one micro-batch's mean loss) with weight {@code share}. */
  public void add(Map<String, Tensor> gradients, double share) {
    if (!sums.isEmpty() && !sums.keySet().equals(gradients.keySet())) {
      throw new IllegalArgumentException(
          "micro-batch gradients of " + gradients.keySet() + " after ones of " + sums.keySet());
    }
    gradients.forEach(
        (name, g) -> {
          float[] v = g.toFloatArray();
          float[] sum = sums.computeIfAbsent(name, k -> new float[v.length]);
          shapes.putIfAbsent(name, g.shape());
          for (int i = 0; i < v.length; i++) {
            sum[i] += (float) (share * v[i]);
          }
        });
    weights += share;
  }

  /** The accumulated gradients; the shares must have summed to 1 (the whole batch). */
  public Map<String, Tensor> total() {
    if (Math.abs(weights - 1) > 1e-9) {
      throw new IllegalStateException("micro-batch shares sum to " + weights + ", not 1");
    }
    Map<String, Tensor> out = new LinkedHashMap<>();
    sums.forEach((name, s) -> out.put(name, Tensor.of(s.clone(), shapes.get(name))));
    return out;
  }
}
