package dev.stepweave.training.optim;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An exponential moving average of the parameters, as diffusers' {@code EMAModel} keeps it: after
 * each optimiser step {@code ema ← ema − (1 − decay)·(ema − θ)}, in float. Starts as a copy of the
 * parameters, kept where each parameter lives (a device's averages are its backend's {@code sub}
 * and {@code affine}, each rounded as the host's float loop rounds it); the averaged weights are
 * what a run usually ships.
 */
public final class Ema {
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
  private final double decay;
  private final Backend backend;
  private final Map<String, Tensor> shadow = new LinkedHashMap<>();

  /** An EMA of {@code parameters}; {@code backend} holds those not on the host. */
  public Ema(double decay, Map<String, Tensor> parameters, Backend backend) {
    if (decay < 0 || decay > 1) {
      throw new IllegalArgumentException("EMA decay must lie in [0, 1], not " + decay);
    }
    this.decay = decay;
    this.backend = backend;
    parameters.forEach((name, p) -> shadow.put(name, copy(p)));
  }

  private static boolean onHost(Tensor t) {
    return t.device().kind() == Device.Kind.CPU;
  }

  /** A contiguous F32 copy of {@code t} where it lives. */
  private Tensor copy(Tensor t) {
    if (onHost(t)) {
      return Tensor.of(t.toFloatArray(), t.shape());
    }
    Tensor out = backend.zeros(DType.F32, t.shape());
    backend.copyInto(out, t);
    return out;
  }

  public void update(Map<String, Tensor> parameters) {
    float oneMinusDecay = (float) (1 - decay);
    shadow.forEach(
        (name, s) -> {
          Tensor p = parameters.get(name);
          if (p == null) {
            throw new IllegalArgumentException("the EMA follows '" + name + "', not given");
          }
          if (onHost(s)) {
            MemorySegment a = s.segment();
            float[] v = p.toFloatArray();
            for (int i = 0; i < v.length; i++) {
              float e = a.getAtIndex(F32, i);
              a.setAtIndex(F32, i, e - oneMinusDecay * (e - v[i]));
            }
          } else {
            Tensor step = backend.affine(backend.sub(s, p), oneMinusDecay, 0f);
            backend.copyInto(s, backend.sub(s, step));
          }
        });
  }

  /** The averages held now, one per parameter. */
  Collection<Tensor> averages() {
    return shadow.values();
  }

  /** A copy of the averages by name, on the host, to save with a checkpoint. */
  public Map<String, float[]> state() {
    Map<String, float[]> out = new LinkedHashMap<>();
    shadow.forEach((name, s) -> out.put(name, hostValues(s)));
    return out;
  }

  /** {@code s}'s values in a Java array, downloaded when a device holds them. */
  private float[] hostValues(Tensor s) {
    return (onHost(s) ? s : backend.download(s)).toFloatArray();
  }

  /** Continues from saved averages, which must follow the same names and sizes. */
  public void restore(Map<String, float[]> state) {
    if (!state.keySet().equals(shadow.keySet())) {
      throw new IllegalArgumentException(
          "EMA state of " + state.keySet() + " for an EMA of " + shadow.keySet());
    }
    state.forEach(
        (name, s) -> {
          Tensor now = shadow.get(name);
          if (s.length != now.numel()) {
            throw new IllegalArgumentException("EMA state of '" + name + "' has another size");
          }
          Tensor saved = Tensor.of(s, now.shape());
          if (onHost(now)) {
            shadow.put(name, saved);
          } else {
            backend.copyInto(now, saved);
          }
        });
  }

  /** The averaged value of {@code name}, shaped as {@code like}, as a host tensor (to write). */
  public Tensor averaged(String name, Tensor like) {
    Tensor s = shadow.get(name);
    if (s == null) {
      throw new IllegalArgumentException("the EMA does not follow '" + name + "'");
    }
    return Tensor.of(hostValues(s), like.shape());
  }
}
