package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleBinaryOperator;

/** Backward rules of the elementwise operations, activations and the rotary embedding. */
final class ElementwiseGrads {
  private static final double SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);
  private static final double INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);
  private static final double GELU_CUBIC = 0.044715;

  private ElementwiseGrads() {}

  /** A rule {@code dx = g · f'(x, y)} for a one-input elementwise op with output y. */
  private static BackwardRule pointwise(Tensor x, Tensor y, DoubleBinaryOperator derivative) {
    return (g, wanted) -> {
      if (!wanted.test(x)) {
        return List.of();
      }
      float[] xv = x.toFloatArray();
      float[] yv = y.toFloatArray();
      float[] dx = new float[g.length];
      Host.parallel(
          g.length,
          (from, to) -> {
            for (int i = from; i < to; i++) {
              dx[i] = (float) (g[i] * derivative.applyAsDouble(xv[i], yv[i]));
            }
          });
      return List.of(new Contribution(x, dx));
    };
  }

  static BackwardRule unary(Tensor x, Tensor y, UnaryOp op) {
    return pointwise(
        x,
        y,
        switch (op) {
          case NEG -> (a, b) -> -1;
          case EXP -> (a, b) -> b;
          case TANH -> (a, b) -> 1 - (double) b * b;
          case SQRT -> (a, b) -> 0.5 / b;
          case RSQRT -> (a, b) -> -0.5 * b * b * b;
          case SIN -> (a, b) -> Math.cos(a);
          case COS -> (a, b) -> -Math.sin(a);
          case RELU -> (a, b) -> a > 0 ? 1 : 0;
          case SIGMOID -> (a, b) -> b * (1.0 - b);
          case ABS -> (a, b) -> Math.signum(a);
          case SQUARE -> (a, b) -> 2.0 * a;
        });
  }

  static BackwardRule gelu(Tensor x, Tensor y, boolean tanhApproximation) {
    if (tanhApproximation) {
      return pointwise(
          x,
          y,
          (a, b) -> {
            double t = Math.tanh(SQRT_2_OVER_PI * (a + GELU_CUBIC * a * a * a));
            return 0.5 * (1 + t)
                + 0.5 * a * (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * GELU_CUBIC * a * a);
          });
    }
    return pointwise(
        x,
        y,
        (a, b) ->
            0.5 * (1 + ErrorFunction.erf(a / Math.sqrt(2)))
                + a * INV_SQRT_2PI * Math.exp(-0.5 * a * a));
  }

  static BackwardRule silu(Tensor x, Tensor y) {
    return pointwise(
        x,
        y,
        (a, b) -> {
          double s = 1 / (1 + Math.exp(-a));
          return s * (1 + a * (1 - s));
        });
  }

  static BackwardRule affine(Tensor x, Tensor y, float scale) {
    return pointwise(x, y, (a, b) -> scale);
  }

  /** As torch: the gradient passes where {@code min ≤ x ≤ max}. */
  static BackwardRule clamp(Tensor x, Tensor y, float min, float max) {
    return pointwise(x, y, (a, b) -> a >= min && a <= max ? 1 : 0);
  }

  /**
   * NumPy-broadcast binary op: each input's gradient is computed over the output's shape and
   * addressed to the input broadcast to that shape, so the broadcast dimensions sum. Ties of MAX
   * and MIN split the gradient in half, as torch's maximum and minimum do.
   */
  static BackwardRule binary(Tensor a, Tensor b, Tensor out, BinaryOp op) {
    int[] shape = out.shape();
    return (g, wanted) -> {
      Tensor ae = a.expand(shape);
      Tensor be = b.expand(shape);
      boolean wantA = wanted.test(a);
      boolean wantB = wanted.test(b);
      float[] av = op == BinaryOp.ADD || op == BinaryOp.SUB ? null : ae.toFloatArray();
      float[] bv = op == BinaryOp.ADD || op == BinaryOp.SUB ? null : be.toFloatArray();
      float[] da = wantA ? new float[g.length] : null;
      float[] db = wantB ? new float[g.length] : null;
      Host.parallel(g.length, (from, to) -> binaryRange(op, g, av, bv, da, db, from, to));
      List<Contribution> out2 = new ArrayList<>(2);
      if (wantA) {
        out2.add(new Contribution(ae, da));
      }
      if (wantB) {
        out2.add(new Contribution(be, db));
      }
      return out2;
    };
  }

  /**
   * Elements {@code [from, to)} of a binary op's gradients; {@code da} or {@code db} may be null.
   */
  private static void binaryRange(
      BinaryOp op, float[] g, float[] av, float[] bv, float[] da, float[] db, int from, int to) {
    for (int i = from; i < to; i++) {
      double gi = g[i];
      double ga;
      double gb;
      switch (op) {
        case ADD -> {
          ga = gi;
          gb = gi;
        }
        case SUB -> {
          ga = gi;
          gb = -gi;
        }
        case MUL -> {
          ga = gi * bv[i];
          gb = gi * av[i];
        }
        case DIV -> {
          double q = 1.0 / bv[i];
          ga = gi * q;
          gb = -gi * av[i] * q * q;
        }
        case MAX, MIN -> {
          boolean aWins = op == BinaryOp.MAX ? av[i] > bv[i] : av[i] < bv[i];
          boolean tie = av[i] == bv[i];
          ga = tie ? gi / 2 : aWins ? gi : 0;
          gb = tie ? gi / 2 : aWins ? 0 : gi;
        }
        default -> throw new IllegalStateException("unknown op " + op);
      }
      if (da != null) {
        da[i] = (float) ga;
      }
      if (db != null) {
        db[i] = (float) gb;
      }
    }
  }

  /**
   * Rotary embedding of interleaved pairs: {@code (a, b) -> (a·c − b·s, a·s + b·c)} is a rotation,
   * so the backward rotates the gradient back. The tables are constants: they take no gradient.
   */
  static BackwardRule rope(Tensor x, Tensor cos, Tensor sin) {
    return (g, wanted) -> {
      if (wanted.test(cos) || wanted.test(sin)) {
        throw new UnsupportedOperationException("rope's cos/sin tables take no gradient");
      }
      if (!wanted.test(x)) {
        return List.of();
      }
      int length = x.dim(1);
      int heads = x.dim(2);
      int pairs = x.dim(3) / 2;
      float[] c = cos.toFloatArray();
      float[] s = sin.toFloatArray();
      float[] dx = new float[g.length];
      Host.parallel(
          g.length / (2 * pairs),
          (first, last) -> {
            for (int row = first; row < last; row++) {
              int l = (row / heads) % length;
              for (int i = 0; i < pairs; i++) {
                int at = row * 2 * pairs + 2 * i;
                double ci = c[l * pairs + i];
                double si = s[l * pairs + i];
                double ga = g[at];
                double gb = g[at + 1];
                dx[at] = (float) (ga * ci + gb * si);
                dx[at + 1] = (float) (-ga * si + gb * ci);
              }
            }
          });
      return List.of(new Contribution(x, dx));
    };
  }
}
