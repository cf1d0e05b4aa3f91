package dev.stepweave.core.loop.policy;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.Tensor;

/**
 * Classifier-free guidance as a pure function: which branches a step needs and how their
 * predictions combine. Running the branches as one batched forward or as two forwards is a dispatch
 * detail ({@link #batched}); the combine is the same either way. Stateless variants need no
 * per-request state; a stateful variant would keep it in the loop state.
 */
public sealed interface CfgPolicy {

  /** Whether a step needs the unconditional branch at all. */
  boolean needsUncond();

  /** True to run cond and uncond as one batched forward, false for two forwards. */
  boolean batched();

  /**
   * Combines the branch predictions of step {@code step}.
   *
   * @param uncond null when {@link #needsUncond} is false
   */
  Tensor combine(Backend ops, Tensor cond, Tensor uncond, int step);

  /**
   * The policy Wan's reference pipeline uses for a guidance scale: classic guidance above 1,
   * conditional-only at or below 1.
   */
  static CfgPolicy forScale(double scale, boolean batched) {
    return scale > 1.0 ? new Classic(scale, batched) : new CondOnly();
  }

  /** {@code uncond + s·(cond − uncond)}. */
  record Classic(double scale, boolean batched) implements CfgPolicy {
    @Override
    public boolean needsUncond() {
      return true;
    }

    @Override
    public Tensor combine(Backend ops, Tensor cond, Tensor uncond, int step) {
      return ops.add(uncond, ops.affine(ops.sub(cond, uncond), (float) scale, 0f));
    }
  }

  /**
   * CFG-Zero*: scales the unconditional prediction by the per-sample projection coefficient {@code
   * s* = <cond, uncond> / ‖uncond‖²} and zeroes the prediction for the first {@code zeroInitSteps}
   * steps.
   */
  record CfgZeroStar(double scale, int zeroInitSteps, boolean batched) implements CfgPolicy {
    @Override
    public boolean needsUncond() {
      return true;
    }

    @Override
    public Tensor combine(Backend ops, Tensor cond, Tensor uncond, int step) {
      if (step < zeroInitSteps) {
        return ops.affine(cond, 0f, 0f);
      }
      int b = cond.dim(0);
      Tensor c = ops.contiguous(cond).reshape(b, -1);
      Tensor u = ops.contiguous(uncond).reshape(b, -1);
      Tensor dot = ops.sumLastDim(ops.mul(c, u));
      Tensor norm = ops.affine(ops.sumLastDim(ops.unary(u, UnaryOp.SQUARE)), 1f, 1e-8f);
      Tensor st = ops.div(dot, norm); // [B, 1]
      Tensor scaledU = ops.mul(u, st);
      Tensor out = ops.add(scaledU, ops.affine(ops.sub(c, scaledU), (float) scale, 0f));
      return out.reshape(cond.shape());
    }
  }

  /**
   * Classic guidance followed by guidance rescale: the result's per-sample standard deviation is
   * pulled towards the conditional prediction's by {@code phi}.
   */
  record Rescaled(double scale, double phi, boolean batched) implements CfgPolicy {
    @Override
    public boolean needsUncond() {
      return true;
    }

    @Override
    public Tensor combine(Backend ops, Tensor cond, Tensor uncond, int step) {
      Tensor cfg = new Classic(scale, batched).combine(ops, cond, uncond, step);
      int b = cond.dim(0);
      Tensor c = ops.contiguous(cond).reshape(b, -1);
      Tensor g = ops.contiguous(cfg).reshape(b, -1);
      Tensor ratio = ops.div(std(ops, c), std(ops, g));
      Tensor rescaled = ops.mul(g, ratio);
      Tensor out =
          ops.add(ops.affine(rescaled, (float) phi, 0f), ops.affine(g, (float) (1 - phi), 0f));
      return out.reshape(cond.shape());
    }

    /** Unbiased standard deviation of each row of {@code x [B, N]}, shape {@code [B, 1]}. */
    private static Tensor std(Backend ops, Tensor x) {
      int n = x.dim(1);
      Tensor mean = ops.affine(ops.sumLastDim(x), 1f / n, 0f);
      Tensor centered = ops.sub(x, mean);
      Tensor var =
          ops.affine(ops.sumLastDim(ops.unary(centered, UnaryOp.SQUARE)), 1f / (n - 1), 0f);
      return ops.unary(var, UnaryOp.SQRT);
    }
  }

  /** The conditional prediction alone (no guidance). */
  record CondOnly() implements CfgPolicy {
    @Override
    public boolean needsUncond() {
      return false;
    }

    @Override
    public boolean batched() {
      return false;
    }

    @Override
    public Tensor combine(Backend ops, Tensor cond, Tensor uncond, int step) {
      return cond;
    }
  }
}
