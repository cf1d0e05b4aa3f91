package dev.stepweave.training.optim;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Adam with decoupled weight decay, step for step as {@code torch.optim.AdamW} on the CPU (its
 * single-tensor path): the parameter first shrinks by {@code 1 − lr·λ}, then the moments update
 * ({@code m ← m + (1−β₁)(g − m)}, {@code v ← β₂v + (1−β₂)g²}) and the parameter moves by {@code
 * −(lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε)}. Element arithmetic in float, the scalars in double,
 * as torch computes them. Parameters are updated in place by the backend they live on ({@link
 * Backend#adamw}: the same bits on the CPU and a GPU), and the moments live beside them, F32 and
 * per parameter name.
 */
public final class AdamW {
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
  private final Backend backend;
  private final Map<String, Tensor> firstMoments = new HashMap<>();
  private final Map<String, Tensor> secondMoments = new HashMap<>();
  private long steps;

  /** AdamW of host parameters. */
  public AdamW(Settings settings) {
    this(settings, new CpuBackend(1));
  }

  /** AdamW of parameters {@code backend} made (the moments are made there too). */
  public AdamW(Settings settings, Backend backend) {
    this.settings = settings;
    this.backend = backend;
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

  /** A copy of the state (on the host), to save with a checkpoint. */
  public State state() {
    return new State(steps, hostCopy(firstMoments), hostCopy(secondMoments));
  }

  /** Every moment tensor held now, first and second. */
  List<Tensor> moments() {
    List<Tensor> all = new ArrayList<>(firstMoments.values());
    all.addAll(secondMoments.values());
    return all;
  }

  /** Continues from a saved state, as if its steps had been taken here. */
  public void restore(State state) {
    steps = state.steps();
    firstMoments.clear();
    secondMoments.clear();
    state.firstMoments().forEach((name, m) -> firstMoments.put(name, here(m)));
    state.secondMoments().forEach((name, v) -> secondMoments.put(name, here(v)));
  }

  private Map<String, float[]> hostCopy(Map<String, Tensor> moments) {
    Map<String, float[]> out = new TreeMap<>();
    moments.forEach(
        (name, t) ->
            out.put(
                name,
                t.device().kind() == Device.Kind.CPU
                    ? t.toFloatArray()
                    : backend.download(t).toFloatArray()));
    return out;
  }

  /** A flat copy of {@code values} made by the backend. */
  private Tensor here(float[] values) {
    Tensor t = backend.zeros(DType.F32, values.length);
    backend.copyInto(t, Tensor.of(values.clone(), values.length));
    return t;
  }

  /**
   * One step at learning rate {@code lr}: every parameter in {@code parameters} moves by its
   * gradient in {@code gradients} (same names; a parameter without one is an error, as a frozen
   * parameter must not be handed to the optimiser).
   *
   * @param parameters contiguous F32 tensors the backend made, updated in place
   */
  public void step(Map<String, Tensor> parameters, Map<String, Tensor> gradients, double lr) {
    step(parameters, gradients, lr, 1);
  }

  /**
   * {@link #step(Map, Map, double)} with every gradient multiplied by {@code gradientScale} first
   * (a clipping's {@link GradientClipping#coefficient}): host gradients in double, each element
   * rounded once, as torch's clipping on the CPU; a device's within its AdamW launches, in float.
   * All of a device's parameters go to its backend in one call.
   */
  public void step(
      Map<String, Tensor> parameters,
      Map<String, Tensor> gradients,
      double lr,
      double gradientScale) {
    steps++;
    Backend.AdamWStep step =
        new Backend.AdamWStep(
            (float) (1 - lr * settings.weightDecay()),
            (float) (lr / (1 - Math.pow(settings.beta1(), steps))),
            (float) (1 - settings.beta1()),
            (float) settings.beta2(),
            (float) (1 - settings.beta2()),
            (float) Math.sqrt(1 - Math.pow(settings.beta2(), steps)),
            (float) settings.eps());
    List<Backend.AdamWTensors> scaledOnHost = new ArrayList<>();
    List<Backend.AdamWTensors> scaledThere = new ArrayList<>();
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
          int n = Math.toIntExact(p.numel());
          Tensor m = firstMoments.computeIfAbsent(name, k -> backend.zeros(DType.F32, n));
          Tensor v = secondMoments.computeIfAbsent(name, k -> backend.zeros(DType.F32, n));
          if (GradientClipping.onHost(g)) {
            Tensor scaled =
                gradientScale == 1 ? g : GradientClipping.scaledOnHost(g, gradientScale);
            scaledOnHost.add(new Backend.AdamWTensors(p, contiguousF32(scaled), m, v));
          } else {
            scaledThere.add(new Backend.AdamWTensors(p, contiguousF32(g), m, v));
          }
        });
    if (!scaledOnHost.isEmpty()) {
      backend.adamw(scaledOnHost, 1f, step);
    }
    if (!scaledThere.isEmpty()) {
      backend.adamw(scaledThere, (float) gradientScale, step);
    }
  }

  private Tensor contiguousF32(Tensor g) {
    return g.dtype() == DType.F32 && g.isContiguous() ? g : backend.contiguous(g);
  }
}
