package dev.stepweave.training.optim;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Adam with decoupled weight decay, step for step as {@code torch.optim.AdamW} on the CPU (its
 * single-tensor path): the parameter first shrinks by {@code 1 − lr·λ}, then the moments update
 * ({@code m ← m + (1−β₁)(g − m)}, {@code v ← β₂v + (1−β₂)g²}) and the parameter moves by {@code
 * −(lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε)}. Element arithmetic in float, the scalars in double,
 * as torch computes them. Parameters are updated in place; the state (moments, step) is F32 and per
 * parameter name.
 */
public final class AdamW {
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

  /** torch's defaults are β = (0.9, 0.999), ε = 1e-8, λ = 0.01. */
  public record Settings(double beta1, double beta2, double eps, double weightDecay) {
    public Settings {
      if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1) {
        throw new IllegalArgumentException(
            "AdamW betas must lie in [0, 1), not (" + beta1 + ", " + beta2 + ")");
      }
      if (eps <= 0 || weightDecay < 0) {
        throw new IllegalArgumentException(
            "AdamW needs eps > 0 and weight decay ≥ 0, not eps " + eps + ", decay " + weightDecay);
      }
    }

    public static Settings torchDefaults() {
      return new Settings(0.9, 0.999, 1e-8, 0.01);
    }
  }

  private final Settings settings;
  private final Map<String, float[]> firstMoments = new HashMap<>();
  private final Map<String, float[]> secondMoments = new HashMap<>();
  private long steps;

  public AdamW(Settings settings) {
    this.settings = settings;
  }

  /** The number of steps taken. */
  public long steps() {
    return steps;
  }

  /**
   * Everything a later step depends on: the step count and each parameter's moments, by name.
   *
   * @param firstMoments m, as flat float arrays
   * @param secondMoments v, as flat float arrays
   */
  public record State(
      long steps, Map<String, float[]> firstMoments, Map<String, float[]> secondMoments) {
    public State {
      if (!firstMoments.keySet().equals(secondMoments.keySet())) {
        throw new IllegalArgumentException("AdamW state: first and second moments of other names");
      }
    }
  }

  /** A copy of the state, to save with a checkpoint. */
  public State state() {
    return new State(steps, copy(firstMoments), copy(secondMoments));
  }

  /** Continues from a saved state, as if its steps had been taken here. */
  public void restore(State state) {
    steps = state.steps();
    firstMoments.clear();
    firstMoments.putAll(copy(state.firstMoments()));
    secondMoments.clear();
    secondMoments.putAll(copy(state.secondMoments()));
  }

  private static Map<String, float[]> copy(Map<String, float[]> moments) {
    Map<String, float[]> out = new TreeMap<>();
    moments.forEach((name, values) -> out.put(name, values.clone()));
    return out;
  }

  /**
   * One step at learning rate {@code lr}: every parameter in {@code parameters} moves by its
   * gradient in {@code gradients} (same names; a parameter without one is an error, as a frozen
   * parameter must not be handed to the optimiser).
   *
   * @param parameters contiguous F32 CPU tensors, updated in place
   */
  public void step(Map<String, Tensor> parameters, Map<String, Tensor> gradients, double lr) {
    steps++;
    double bias1 = 1 - Math.pow(settings.beta1(), steps);
    double bias2Sqrt = Math.sqrt(1 - Math.pow(settings.beta2(), steps));
    float stepSize = (float) (lr / bias1);
    float shrink = (float) (1 - lr * settings.weightDecay());
    float oneMinusBeta1 = (float) (1 - settings.beta1());
    float beta2 = (float) settings.beta2();
    float oneMinusBeta2 = (float) (1 - settings.beta2());
    float bias2 = (float) bias2Sqrt;
    float eps = (float) settings.eps();
    parameters.forEach(
        (name, p) -> {
          Tensor g = gradients.get(name);
          if (g == null) {
            throw new IllegalArgumentException("no gradient for parameter '" + name + "'");
          }
          if (p.dtype() != DType.F32 || !p.isContiguous() || p.numel() != g.numel()) {
            throw new IllegalArgumentException(
                "parameter '" + name + "' must be contiguous F32 with its gradient's size");
          }
          int n = (int) p.numel();
          float[] grad = g.toFloatArray();
          float[] m = firstMoments.computeIfAbsent(name, k -> new float[n]);
          float[] v = secondMoments.computeIfAbsent(name, k -> new float[n]);
          MemorySegment seg = p.segment();
          for (int i = 0; i < n; i++) {
            float value = seg.getAtIndex(F32, i) * shrink;
            m[i] = m[i] + oneMinusBeta1 * (grad[i] - m[i]);
            v[i] = v[i] * beta2 + oneMinusBeta2 * grad[i] * grad[i];
            float denom = (float) Math.sqrt(v[i]) / bias2 + eps;
            seg.setAtIndex(F32, i, value - stepSize * (m[i] / denom));
          }
        });
  }
}
