package dev.stepweave.training.optim;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Gradient accumulation: the gradients of several micro-batches, each weighted by its share of the
 * whole batch, summed — so a mean loss over a batch too large for one pass gets exactly the
 * gradient of that batch (up to float summation order). Each sum lives where its gradients do: host
 * sums add {@code (float) (share · g)} element by element, a device's are its backend's {@code
 * affine} and {@code addInto}.
 */
public final class GradientAccumulator {
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
  private final Backend backend;
  private final Map<String, Tensor> sums = new LinkedHashMap<>();
  // The first micro-batch's gradients, not yet scaled: a batch of one micro-batch (share 1) is
  // handed on as it came, with no scaled copy of a model's worth of gradients beside it.
  private Map<String, Tensor> first;
  private double firstShare;
  private double weights;

  /** An accumulator whose device sums {@code backend} makes (host ones need none). */
  public GradientAccumulator(Backend backend) {
    this.backend = backend;
  }

  /** Adds {@code gradients} (of one micro-batch's mean loss) with weight {@code share}. */
  public void add(Map<String, Tensor> gradients, double share) {
    Map<String, Tensor> earlier = first != null ? first : sums;
    if (!earlier.isEmpty() && !earlier.keySet().equals(gradients.keySet())) {
      throw new IllegalArgumentException(
          "micro-batch gradients of " + gradients.keySet() + " after ones of " + earlier.keySet());
    }
    if (first == null && sums.isEmpty()) {
      first = gradients;
      firstShare = share;
    } else {
      sumFirst();
      addScaled(gradients, share);
    }
    weights += share;
  }

  /** The first micro-batch's gradients into the sums, scaled by their share. */
  private void sumFirst() {
    if (first != null) {
      addScaled(first, firstShare);
      first = null;
    }
  }

  private void addScaled(Map<String, Tensor> gradients, double share) {
    gradients.forEach(
        (name, g) -> {
          Tensor sum = sums.get(name);
          if (g.device().kind() == Device.Kind.CPU) {
            if (sum == null) {
              sum = Tensor.zeros(DType.F32, g.shape());
              sums.put(name, sum);
            }
            float[] v = g.toFloatArray();
            MemorySegment s = sum.segment();
            for (int i = 0; i < v.length; i++) {
              s.setAtIndex(F32, i, s.getAtIndex(F32, i) + (float) (share * v[i]));
            }
          } else {
            Tensor scaled = backend.affine(g, (float) share, 0f);
            if (sum == null) {
              sums.put(name, scaled);
            } else {
              backend.addInto(sum, scaled);
            }
          }
        });
  }

  /**
   * The accumulated gradients; the shares must have summed to 1 (the whole batch). One micro-batch
   * gives its own gradients back (its device tensors themselves, host ones as copies).
   */
  public Map<String, Tensor> total() {
    if (Math.abs(weights - 1) > 1e-9) {
      throw new IllegalStateException("micro-batch shares sum to " + weights + ", not 1");
    }
    if (firstShare != 1) {
      sumFirst(); // one micro-batch of the whole batch goes on as it came
    }
    Map<String, Tensor> out = new LinkedHashMap<>();
    (first != null ? first : sums)
        .forEach(
            (name, s) ->
                out.put(
                    name,
                    s.device().kind() == Device.Kind.CPU
                        ? Tensor.of(s.toFloatArray(), s.shape())
                        : s));
    return out;
  }
}
