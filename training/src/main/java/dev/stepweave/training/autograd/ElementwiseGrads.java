package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleBinaryOperator;

/**
 * Backward rules of the elementwise operations, activations and the rotary embedding. The linear
 * ones (sums, products, quotients, affine maps, the rotation) are the forward backend's own
 * operations; the derivatives of the activations and of the other unary operations are evaluated on
 * the host in double.
 */
final class ElementwiseGrads {
  private static final double SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);
  private static final double INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);
  private static final double GELU_CUBIC = 0.044715;

  private ElementwiseGrads() {}

  /** A rule {@code dx = g · f'(x, y)} for a one-input elementwise op with output y. */
  private static BackwardRule pointwise(
      Backend device, Tensor x, Tensor y, DoubleBinaryOperator derivative) {
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          if (!wanted.test(x)) {
            return List.of();
          }
          float[] xv = Host.values(device, x);
          float[] yv = Host.values(device, y);
          float[] dx = new float[g.length];
          Host.parallel(
              g.length,
              (from, to) -> {
                for (int i = from; i < to; i++) {
                  dx[i] = (float) (g[i] * derivative.applyAsDouble(xv[i], yv[i]));
                }
              });
          return List.of(new Contribution(x, dx));
        });
  }

  static BackwardRule unary(Backend device, Tensor x, Tensor y, UnaryOp op) {
    return pointwise(
        device,
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

  static BackwardRule gelu(Backend device, Tensor x, Tensor y, boolean tanhApproximation) {
    if (tanhApproximation) {
      return pointwise(
          device,
          x,
          y,
          (a, b) -> {
            double t = Math.tanh(SQRT_2_OVER_PI * (a + GELU_CUBIC * a * a * a));
            return 0.5 * (1 + t)
                + 0.5 * a * (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * GELU_CUBIC * a * a);
          });
    }
    return pointwise(
        device,
        x,
        y,
        (a, b) ->
            0.5 * (1 + ErrorFunction.erf(a / Math.sqrt(2)))
                + a * INV_SQRT_2PI * Math.exp(-0.5 * a * a));
  }

  static BackwardRule silu(Backend device, Tensor x, Tensor y) {
    return pointwise(
        device,
        x,
        y,
        (a, b) -> {
          double s = 1 / (1 + Math.exp(-a));
          return s * (1 + a * (1 - s));
        });
  }

  static BackwardRule affine(Backend device, Tensor x, float scale) {
    return (g, wanted) ->
        wanted.test(x) ? List.of(new Contribution(x, device.affine(g, scale, 0f))) : List.of();
  }

  /** As torch: the gradient passes where {@code min ≤ x ≤ max}. */
  static BackwardRule clamp(Backend device, Tensor x, Tensor y, float min, float max) {
    return pointwise(device, x, y, (a, b) -> a >= min && a <= max ? 1 : 0);
  }

  /**
   * NumPy-broadcast binary op: each input's gradient is computed over the output's shape and
   * addressed to the input broadcast to that shape, so the broadcast dimensions sum. Ties of MAX
   * and MIN split the gradient in half, as torch's maximum and minimum do.
   */
  static BackwardRule binary(Backend device, Tensor a, Tensor b, Tensor out, BinaryOp op) {
    int[] shape = out.shape();
    Tensor ae = a.expand(shape);
    Tensor be = b.expand(shape);
    if (op == BinaryOp.MAX || op == BinaryOp.MIN) {
      return BackwardRule.onHost(
          device,
          (g, wanted) -> {
            boolean wantA = wanted.test(a);
            boolean wantB = wanted.test(b);
            float[] av = Host.values(device, ae);
            float[] bv = Host.values(device, be);
            float[] da = wantA ? new float[g.length] : null;
            float[] db = wantB ? new float[g.length] : null;
            Host.parallel(g.length, (from, to) -> extremumRange(op, g, av, bv, da, db, from, to));
            List<Contribution> list = new ArrayList<>(2);
            if (wantA) {
              list.add(new Contribution(ae, da));
            }
            if (wantB) {
              list.add(new Contribution(be, db));
            }
            return list;
          });
    }
    return (g, wanted) -> {
      List<Contribution> list = new ArrayList<>(2);
      if (wanted.test(a)) {
        list.add(
            new Contribution(
                ae,
                switch (op) {
                  case ADD, SUB -> g;
                  case MUL -> device.mul(g, be);
                  case DIV -> device.div(g, be);
                  default -> throw new IllegalStateException("unknown op " + op);
                }));
      }
      if (wanted.test(b)) {
        list.add(
            new Contribution(
                be,
                switch (op) {
                  case ADD -> g;
                  case SUB -> device.affine(g, -1f, 0f);
                  case MUL -> device.mul(g, ae);
                  // −g·a/b², as (g/b)·(a/b) · −1: each quotient stays in range where b² would not
                  case DIV ->
                      device.affine(device.mul(device.div(g, be), device.div(ae, be)), -1f, 0f);
                  default -> throw new IllegalStateException("unknown op " + op);
                }));
      }
      return list;
    };
  }

  /**
   * Elements {@code [from, to)} of MAX's or MIN's gradients; {@code da} or {@code db} may be null.
   */
  private static void extremumRange(
      BinaryOp op, float[] g, float[] av, float[] bv, float[] da, float[] db, int from, int to) {
    for (int i = from; i < to; i++) {
      boolean aWins = op == BinaryOp.MAX ? av[i] > bv[i] : av[i] < bv[i];
      boolean tie = av[i] == bv[i];
      if (da != null) {
        da[i] = tie ? g[i] / 2 : aWins ? g[i] : 0;
      }
      if (db != null) {
        db[i] = tie ? g[i] / 2 : aWins ? 0 : g[i];
      }
    }
  }

  /**
   * Rotary embedding of interleaved pairs: {@code (a, b) -> (a·c − b·s, a·s + b·c)} is a rotation,
   * so the backward rotates the gradient back. The tables are constants: they take no gradient.
   */
  static BackwardRule rope(Backend device, Tensor x, Tensor cos, Tensor sin) {
    return (g, wanted) -> {
      if (wanted.test(cos) || wanted.test(sin)) {
        throw new UnsupportedOperationException("rope's cos/sin tables take no gradient");
      }
      if (!wanted.test(x)) {
        return List.of();
      }
      // The inverse rotation: the same tables with the sine negated.
      return List.of(new Contribution(x, device.rope(g, cos, device.affine(sin, -1f, 0f))));
    };
  }
}
