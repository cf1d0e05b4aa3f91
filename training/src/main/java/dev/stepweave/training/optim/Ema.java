package dev.stepweave.training.optim;

import dev.stepweave.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An exponential moving average of the parameters, as diffusers' {@code EMAModel} keeps it: after
 * each optimiser step {@code ema ← ema − (1 − decay)·(ema − θ)}. Starts as a copy of the
 * parameters; the averaged weights are what a run usually ships.
 */
public final class Ema {
  private final double decay;
  private final Map<String, float[]> shadow = new LinkedHashMap<>();

  public Ema(double decay, Map<String, Tensor> parameters) {
    if (decay < 0 || decay > 1) {
      throw new IllegalArgumentException("EMA decay must lie in [0, 1], not " + decay);
    }
    this.decay = decay;
    parameters.forEach((name, p) -> shadow.put(name, p.toFloatArray()));
  }

  public void update(Map<String, Tensor> parameters) {
    float oneMinusDecay = (float) (1 - decay);
    shadow.forEach(
        (name, s) -> {
          Tensor p = parameters.get(name);
          if (p == null) {
            throw new IllegalArgumentException("the EMA follows '" + name + "', not given");
          }
          float[] v = p.toFloatArray();
          for (int i = 0; i < s.length; i++) {
            s[i] -= oneMinusDecay * (s[i] - v[i]);
          }
        });
  }

  /** A copy of the averages by name, to save with a checkpoint. */
  public Map<String, float[]> state() {
    Map<String, float[]> out = new LinkedHashMap<>();
    shadow.forEach((name, s) -> out.put(name, s.clone()));
    return out;
  }

  /** Continues from saved averages, which must follow the same names and sizes. */
  public void restore(Map<String, float[]> state) {
    if (!state.keySet().equals(shadow.keySet())) {
      throw new IllegalArgumentException(
          "EMA state of " + state.keySet() + " for an EMA of " + shadow.keySet());
    }
    state.forEach(
        (name, s) -> {
          if (s.length != shadow.get(name).length) {
            throw new IllegalArgumentException("EMA state of '" + name + "' has another size");
          }
          shadow.put(name, s.clone());
        });
  }

  /** The averaged value of {@code name}, shaped as {@code like}. */
  public Tensor averaged(String name, Tensor like) {
    float[] s = shadow.get(name);
    if (s == null) {
      throw new IllegalArgumentException("the EMA does not follow '" + name + "'");
    }
    return Tensor.of(s.clone(), like.shape());
  }
}
