package dev.stepweave.training.autograd;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.DoubleUnaryOperator;

/**
 * Checks a recorded backward against central finite differences of the forward, which runs in F32
 * on the CPU backend.
 *
 * <p>For a random output weighting w the scalar is {@code L(x) = Σ w·f(x)} (summed in double); for
 * a random direction d of each input, the tape's {@code ⟨∇L, d⟩} is compared with the
 * Richardson-extrapolated central difference {@code (4·D(h/2) − D(h))/3}, {@code D(h) = (L(x+h·d) −
 * L(x−h·d))/(2h)}, whose truncation error is O(h⁴) ≈ 1e-8 at h = 1e-2 for the smooth ops. What is
 * left is float rounding of the forward: each output element carries a relative error of a few ulps
 * (2⁻²⁴ ≈ 6e-8 each), so L carries about {@code c·6e-8·‖w·f‖₂} and the difference quotient that
 * divided by h. The bound is therefore {@code 1e-4·scale + 32·2⁻²⁴·‖w·f‖₂ / h}, with scale the sum
 * of |∂L/∂x_i·d_i| (the size of the derivative before cancellation) and the second term the
 * rounding noise of independent per-element errors of a few ulps (with margin for the two step
 * sizes). Measured errors stay below a tenth of it; a rule wrong in any one component by 1 %
 * changes ⟨∇L, d⟩ by far more, for a random d, than the bound.
 */
final class GradientCheck {
  private static final double H = 1e-2;
  private static final double ULP = Math.pow(2, -24);

  private final Random random;

  GradientCheck(long seed) {
    this.random = new Random(seed);
  }

  /** Random normal values of {@code shape}. */
  Tensor normal(int... shape) {
    float[] v = new float[(int) Tensor.numel(shape)];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) random.nextGaussian();
    }
    return Tensor.of(v, shape);
  }

  /** Uniform values in {@code [lo, hi)} of {@code shape}. */
  Tensor uniform(double lo, double hi, int... shape) {
    float[] v = new float[(int) Tensor.numel(shape)];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (lo + (hi - lo) * random.nextDouble());
    }
    return Tensor.of(v, shape);
  }

  /** Values whose magnitude lies in {@code [lo, hi)}, random sign: away from a kink at zero. */
  Tensor awayFromZero(double lo, double hi, int... shape) {
    float[] v = uniform(lo, hi, shape).toFloatArray();
    for (int i = 0; i < v.length; i++) {
      v[i] = random.nextBoolean() ? v[i] : -v[i];
    }
    return Tensor.of(v, shape);
  }

  /**
   * Checks the gradient of {@code f} with respect to every input along three random directions,
   * each scaled by {@code step} (the largest perturbation the op tolerates without crossing a kink,
   * relative to h).
   */
  /** A function of the inputs computed through {@code backend}. */
  @FunctionalInterface
  interface Forward {
    Tensor apply(Backend backend, List<Tensor> inputs);
  }

  void check(String name, Forward f, List<Tensor> inputs) {
    check(name, f, inputs, 1.0);
  }

  void check(String name, Forward f, List<Tensor> inputs, double step) {
    CpuBackend cpu = new CpuBackend();
    RecordingBackend backend = new RecordingBackend(cpu);
    Tape tape = new Tape();
    inputs.forEach(tape::track);
    Tensor out = backend.recording(tape, () -> f.apply(backend, inputs));
    float[] w = normal((int) out.numel()).toFloatArray();
    Gradients grads = tape.backward(out, w);
    for (int i = 0; i < inputs.size(); i++) {
      float[] g = grads.of(inputs.get(i)).toFloatArray();
      for (int trial = 0; trial < 3; trial++) {
        float[] d = normal(g.length).toFloatArray();
        for (int j = 0; j < d.length; j++) {
          d[j] *= (float) step;
        }
        double analytic = 0;
        double scale = 0;
        for (int j = 0; j < g.length; j++) {
          analytic += (double) g[j] * d[j];
          scale += Math.abs((double) g[j] * d[j]);
        }
        int at = i;
        DoubleUnaryOperator loss = h -> weighted(w, f.apply(cpu, moved(inputs, at, d, h)));
        double dh = (loss.applyAsDouble(H) - loss.applyAsDouble(-H)) / (2 * H);
        double dh2 = (loss.applyAsDouble(H / 2) - loss.applyAsDouble(-H / 2)) / H;
        double numeric = (4 * dh2 - dh) / 3;
        double bound = 1e-4 * scale + 32 * ULP * norm(w, out) / H;
        double err = Math.abs(numeric - analytic);
        assertTrue(
            err <= bound,
            name
                + ": input "
                + i
                + " direction "
                + trial
                + ": tape "
                + analytic
                + ", finite differences "
                + numeric
                + " (error "
                + err
                + " > bound "
                + bound
                + ")");
      }
    }
  }

  private static List<Tensor> moved(List<Tensor> inputs, int which, float[] d, double h) {
    List<Tensor> out = new ArrayList<>(inputs);
    Tensor x = inputs.get(which);
    float[] v = x.toFloatArray();
    for (int j = 0; j < v.length; j++) {
      v[j] = (float) (v[j] + h * d[j]);
    }
    out.set(which, Tensor.of(v, x.shape()));
    return out;
  }

  private static double weighted(float[] w, Tensor out) {
    float[] v = out.toFloatArray();
    double s = 0;
    for (int i = 0; i < v.length; i++) {
      s += (double) w[i] * v[i];
    }
    return s;
  }

  /** {@code ‖w·f‖₂}: the size of L's rounding noise, in units of the elements' rounding. */
  private static double norm(float[] w, Tensor out) {
    float[] v = out.toFloatArray();
    double s = 0;
    for (int i = 0; i < v.length; i++) {
      double t = (double) w[i] * v[i];
      s += t * t;
    }
    return Math.sqrt(s);
  }
}
