package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.PluginSlot;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * DBCache for one transformer forward: the front blocks always run; each batch row (one request's
 * CFG branch) then decides from its own slot whether to reuse the middle blocks' residual; the back
 * blocks always run. A row that reuses gets exactly what it would get alone, whatever the other
 * rows decide: when some row computes, the middle blocks run for the batch and reusing rows take
 * their cached residual instead.
 *
 * <p>Slot contents: {@code front} (the front residual at the last computed step, the reference the
 * change is measured against), {@code d0..d2} (the middle residual and its finite-difference
 * derivatives over steps), {@code computed_step}, {@code consecutive}, and the {@code count_*}
 * counters reported per request.
 */
final class ResidualCache implements BlockHooks {
  private final ResidualCacheConfig cfg;
  private final Backend ops;
  private final List<PluginSlot> rows;
  private final int step;

  /**
   * @param rows the slot of each batch row, in batch order
   * @param step the denoising step this forward computes
   */
  ResidualCache(ResidualCacheConfig cfg, Backend ops, List<PluginSlot> rows, int step) {
    this.cfg = cfg;
    this.ops = ops;
    this.rows = List.copyOf(rows);
    this.step = step;
  }

  @Override
  public Tensor runBlocks(Tensor x, BlockRunner blocks, int count) {
    if (x.dim(0) != rows.size()) {
      throw new IllegalArgumentException(
          "batch of " + x.dim(0) + " rows but " + rows.size() + " cache slots");
    }
    int front = Math.min(cfg.fn(), count);
    int back = Math.min(cfg.bn(), count - front);
    int middleEnd = count - back;
    int middle = middleEnd - front;
    Tensor afterFront = blocks.run(0, front, x);
    if (middle == 0) {
      return blocks.run(front, count, afterFront);
    }
    Tensor frontResidual = ops.sub(afterFront, x);
    boolean[] reuse = new boolean[rows.size()];
    boolean allReuse = true;
    for (int r = 0; r < reuse.length; r++) {
      reuse[r] = mayReuse(rows.get(r), row(frontResidual, r));
      allReuse &= reuse[r];
    }
    Tensor computed = allReuse ? null : blocks.run(front, middleEnd, afterFront);
    List<Tensor> out = new ArrayList<>(reuse.length);
    for (int r = 0; r < reuse.length; r++) {
      PluginSlot slot = rows.get(r);
      slot.add("count_blocks", count);
      if (reuse[r]) {
        out.add(ops.add(row(afterFront, r), predictedResidual(slot)));
        slot.add("count_cached_steps", 1);
        slot.add("count_skipped_blocks", middle);
        slot.add("consecutive", 1);
      } else {
        Tensor mine = row(computed, r);
        remember(slot, row(frontResidual, r), ops.sub(mine, row(afterFront, r)));
        out.add(mine);
        slot.add("count_computed_steps", 1);
      }
    }
    Tensor afterMiddle = out.size() == 1 ? out.get(0) : ops.concat(out, 0);
    return blocks.run(middleEnd, count, afterMiddle);
  }

  private boolean mayReuse(PluginSlot slot, Tensor frontResidual) {
    if (cfg.threshold() <= 0 || step < cfg.warmupSteps() || slot.tensor("d0") == null) {
      return false;
    }
    if (cfg.maxCachedSteps() >= 0 && slot.number("count_cached_steps") >= cfg.maxCachedSteps()) {
      return false;
    }
    if (cfg.maxConsecutiveCachedSteps() >= 0
        && slot.number("consecutive") >= cfg.maxConsecutiveCachedSteps()) {
      return false;
    }
    return relativeL1(frontResidual, slot.tensor("front")) < cfg.threshold();
  }

  /** The middle residual at this step: the cached one, or its Taylor extrapolation. */
  private Tensor predictedResidual(PluginSlot slot) {
    Tensor r = slot.tensor("d0");
    float dt = (float) (step - slot.number("computed_step"));
    if (cfg.taylorSeerOrder() >= 1 && slot.tensor("d1") != null) {
      r = ops.add(r, ops.affine(slot.tensor("d1"), dt, 0f));
    }
    if (cfg.taylorSeerOrder() >= 2 && slot.tensor("d2") != null) {
      r = ops.add(r, ops.affine(slot.tensor("d2"), dt * dt / 2f, 0f));
    }
    return r;
  }

  /** Stores a computed step: the new reference and the residual's finite differences. */
  private void remember(PluginSlot slot, Tensor frontResidual, Tensor middleResidual) {
    Tensor previous = slot.tensor("d0");
    if (cfg.taylorSeerOrder() >= 1 && previous != null) {
      float inv = (float) (1.0 / (step - slot.number("computed_step")));
      Tensor d1 = ops.affine(ops.sub(middleResidual, previous), inv, 0f);
      Tensor previousD1 = slot.tensor("d1");
      if (cfg.taylorSeerOrder() >= 2 && previousD1 != null) {
        slot.put("d2", ops.affine(ops.sub(d1, previousD1), inv, 0f));
      }
      slot.put("d1", d1);
    }
    slot.put("d0", middleResidual);
    slot.put("front", frontResidual);
    slot.put("computed_step", step);
    slot.put("consecutive", 0);
  }

  /** mean |a − b| / mean |b|. */
  private double relativeL1(Tensor a, Tensor b) {
    double num = sumAbs(ops.sub(a, b));
    double den = sumAbs(b);
    return den == 0 ? Double.POSITIVE_INFINITY : num / den;
  }

  private double sumAbs(Tensor t) {
    Tensor abs = ops.contiguous(ops.unary(t, Backend.UnaryOp.ABS));
    Tensor sum = ops.sumLastDim(abs.reshape(1, (int) abs.numel()));
    return ops.download(sum).toFloatArray()[0];
  }

  private Tensor row(Tensor t, int r) {
    return rows.size() == 1 ? t : t.slice(0, r, r + 1);
  }
}
