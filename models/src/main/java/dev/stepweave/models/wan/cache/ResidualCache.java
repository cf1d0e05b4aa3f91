package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.PluginSlot;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * DBCache for one transformer forward: the front blocks always run; each batch row (one request's
 * CFG branch, from one request or several batched together) then decides from its own slot, its own
 * settings and its own step whether to reuse the middle blocks' residual; the back blocks always
 * run. A row that reuses gets exactly what it would get alone, whatever the other rows decide: when
 * some row computes, the middle blocks run for the batch and reusing rows take their cached
 * residual instead.
 *
 * <p>Slot contents: {@code front} (the front residual at the last computed step, the reference the
 * change is measured against), {@code d0..d2} (the middle residual and its finite-difference
 * derivatives over steps), {@code computed_step}, {@code consecutive}, and the {@code count_*}
 * counters reported per request.
 */
final class ResidualCache implements BlockHooks {
  private final Backend ops;
  private final List<BlockCacheRow> rows;
  private final int fn;
  private final int bn;

  /**
   * @param rows each batch row, in batch order; all with the same {@code fn} and {@code bn}
   */
  ResidualCache(Backend ops, List<BlockCacheRow> rows) {
    this.ops = ops;
    this.rows = List.copyOf(rows);
    this.fn = rows.get(0).cfg().fn();
    this.bn = rows.get(0).cfg().bn();
    for (BlockCacheRow r : rows) {
      if (r.cfg().fn() != fn || r.cfg().bn() != bn) {
        throw new IllegalArgumentException(
            "rows of one forward must compute the same blocks: F"
                + fn
                + "B"
                + bn
                + " and F"
                + r.cfg().fn()
                + "B"
                + r.cfg().bn());
      }
    }
  }

  @Override
  public Tensor runBlocks(Tensor x, BlockRunner blocks, int count) {
    if (x.dim(0) != rows.size()) {
      throw new IllegalArgumentException(
          "batch of " + x.dim(0) + " rows but " + rows.size() + " cache slots");
    }
    int front = Math.min(fn, count);
    int back = Math.min(bn, count - front);
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
      BlockCacheRow cached = rows.get(r);
      PluginSlot slot = cached.slot();
      slot.add("count_blocks", count);
      if (reuse[r]) {
        out.add(
            ops.add(
                row(afterFront, r),
                TaylorSeries.predict(ops, slot, cached.cfg().taylorSeerOrder(), cached.step())));
        slot.add("count_cached_steps", 1);
        slot.add("count_skipped_blocks", middle);
        slot.add("consecutive", 1);
      } else {
        Tensor mine = row(computed, r);
        remember(cached, row(frontResidual, r), ops.sub(mine, row(afterFront, r)));
        out.add(mine);
        slot.add("count_computed_steps", 1);
      }
    }
    Tensor afterMiddle = out.size() == 1 ? out.get(0) : ops.concat(out, 0);
    return blocks.run(middleEnd, count, afterMiddle);
  }

  private boolean mayReuse(BlockCacheRow row, Tensor frontResidual) {
    ResidualCacheConfig cfg = row.cfg();
    PluginSlot slot = row.slot();
    if (cfg.threshold() <= 0 || row.step() < cfg.warmupSteps() || TaylorSeries.isEmpty(slot)) {
      return false;
    }
    if (cfg.maxCachedSteps() >= 0 && slot.number("count_cached_steps") >= cfg.maxCachedSteps()) {
      return false;
    }
    if (cfg.maxConsecutiveCachedSteps() >= 0
        && slot.number("consecutive") >= cfg.maxConsecutiveCachedSteps()) {
      return false;
    }
    return RelativeL1.of(ops, frontResidual, slot.tensor("front")) < cfg.threshold();
  }

  /** Stores a computed step: the new reference and the middle residual's series. */
  private void remember(BlockCacheRow row, Tensor frontResidual, Tensor middleResidual) {
    PluginSlot slot = row.slot();
    TaylorSeries.remember(ops, slot, row.cfg().taylorSeerOrder(), middleResidual, row.step());
    slot.put("front", frontResidual);
    slot.put("consecutive", 0);
  }

  private Tensor row(Tensor t, int r) {
    return rows.size() == 1 ? t : t.slice(0, r, r + 1);
  }
}
