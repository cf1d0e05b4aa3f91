package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleBinaryOperator;
import java.util.function.UnaryOperator;

/**
 * Backward rules of the elementwise operations, activations and the rotary embedding, in the
 * forward backend's own operations. The derivatives that are steps (ReLU, abs, clamp, max and min)
 * and exact GELU's, which needs erf, are evaluated on the host in double.
 */
final class ElementwiseGrads {
  private static final double INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

  private ElementwiseGrads() {}

  /** A rule {@code dx = g · f'(x, y)}, the derivative evaluated on the host in double. */
  private static BackwardRule onHost(
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

  /** A rule whose {@code dx}, given g, is made of backend operations. */
  private static BackwardRule pointwise(Tensor x, UnaryOperator<Tensor> dx) {
    return (g, wanted) -> wanted.test(x) ? List.of(new Contribution(x, dx.apply(g))) : List.of();
  }

  static BackwardRule unary(Backend device, Tensor x, Tensor y, UnaryOp op) {
    return switch (op) {
      case RELU -> onHost(device, x, y, (a, b) -> a > 0 ? 1 : 0);
      case ABS -> onHost(device, x, y, (a, b) -> Math.signum(a));
      case NEG -> pointwise(x, g -> device.affine(g, -1f, 0f));
      case EXP -> pointwise(x, g -> device.mul(g, y));
      case TANH ->
          pointwise(x, g -> device.mul(g, oneMinus(device, device.unary(y, UnaryOp.SQUARE))));
      case SQRT -> pointwise(x, g -> device.div(device.affine(g, 0.5f, 0f), y));
      case RSQRT ->
          pointwise(
              x,
              g ->
                  device.mul(
                      g, device.affine(device.mul(device.unary(y, UnaryOp.SQUARE), y), -0.5f, 0f)));
      case SIN -> pointwise(x, g -> device.mul(g, device.unary(x, UnaryOp.COS)));
      case COS ->
          pointwise(x, g -> device.mul(g, device.affine(device.unary(x, UnaryOp.SIN), -1f, 0f)));
      case SIGMOID -> pointwise(x, g -> device.mul(g, device.mul(y, oneMinus(device, y))));
      case SQUARE -> pointwise(x, g -> device.mul(g, device.affine(x, 2f, 0f)));
    };
  }

  /** {@code 1 − t}. */
  private static Tensor oneMinus(Backend device, Tensor t) {
    return device.affine(t, -1f, 1f);
  }

  /**
   * GELU's derivative. The tanh form is the backend's ({@link Backend#geluTanhBackward}); the exact
   * form needs erf, which the backends do not have, so it runs on the host.
   */
  static BackwardRule gelu(Backend device, Tensor x, Tensor y, boolean tanhApproximation) {
    if (!tanhApproximation) {
      return onHost(
          device,
          x,
          y,
          (a, b) ->
              0.5 * (1 + ErrorFunction.erf(a / Math.sqrt(2)))
                  + a * INV_SQRT_2PI * Math.exp(-0.5 * a * a));
    }
    return pointwise(x, g -> device.geluTanhBackward(g, x));
  }

  /** SiLU's derivative, with {@code s = σ(x)}: {@code s·(1 + x·(1 − s))}. */
  static BackwardRule silu(Backend device, Tensor x, Tensor y) {
    return pointwise(
        x,
        g -> {
          Tensor s = device.unary(x, UnaryOp.SIGMOID);
          return device.mul(
              g, device.mul(s, device.affine(device.mul(x, oneMinus(device, s)), 1f, 1f)));
        });
  }

  static BackwardRule affine(Backend device, Tensor x, float scale) {
    return pointwise(x, g -> device.affine(g, scale, 0f));
  }

  /** As torch: the gradient passes where {@code min ≤ x ≤ max}. */
  static BackwardRule clamp(Backend device, Tensor x, Tensor y, float min, float max) {
    return onHost(device, x, y, (a, b) -> a >= min && a <= max ? 1 : 0);
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
      return List.of(new Contribution(x, unrotated(device, g, cos, sin)));
    };
  }

  /** The inverse rotation of {@code g}: the same tables with the sine negated. */
  static Tensor unrotated(Backend device, Tensor g, Tensor cos, Tensor sin) {
    return device.rope(g, cos, device.affine(sin, -1f, 0f));
  }

  /**
   * {@code x + y·gate} ({@code x + y} without a gate), as the gated residual's composition
   * differentiates it: g to x, {@code g·gate} to y and {@code g·y} to the gate, whose broadcast the
   * gradients sum.
   */
  static BackwardRule gatedResidual(Backend device, Tensor x, Tensor y, Tensor gate) {
    return (g, wanted) -> {
      List<Contribution> list = new ArrayList<>(3);
      if (wanted.test(x)) {
        list.add(new Contribution(x, g));
      }
      if (wanted.test(y)) {
        list.add(new Contribution(y, gate == null ? g : device.mul(g, gate.expand(y.shape()))));
      }
      if (gate != null && wanted.test(gate)) {
        list.add(new Contribution(gate.expand(y.shape()), device.mul(g, y)));
      }
      return list;
    };
  }
}
