package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.PluginSlot;
import dev.stepweave.core.extend.PluginState;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkCall;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.Optional;

/**
 * The step cache of one request: it caches the combined (guided) prediction, so it has one slot per
 * request, branch {@value #BRANCH}. Whether a step is reused is decided when the step is planned,
 * from the slot alone, so a reused step's plan holds no transformer call and is never part of a
 * batched forward.
 *
 * <p>Slot contents: {@code input} (the latents of the previous step), {@code accumulated} (the
 * change since the last computed step), {@code measured_step} and {@code measured_accumulated}
 * (that change up to the next step's input, measured when the previous step was folded in), {@code
 * d0..d2} and {@code computed_step} (the prediction's series, {@link TaylorSeries}), {@code
 * consecutive}, and the {@code count_*} counters.
 */
final class StepCache {
  static final String BRANCH = "guided";
  private static final String MEASURED_STEP = "measured_step";
  private static final String MEASURED_ACCUMULATED = "measured_accumulated";

  private final StepCacheConfig cfg;

  StepCache(StepCacheConfig cfg) {
    this.cfg = cfg;
  }

  /**
   * The call that reuses the cached prediction at {@code step}, or empty when the step must run the
   * transformer. Reads only numbers of {@code state} (the change since the last computed step was
   * measured when the previous step was folded in, see {@link #measured}), so planning launches
   * nothing; the call returns the state's next version and never writes this one.
   */
  Optional<WorkCall> reuse(Backend ops, PluginState state, Tensor latents, int step) {
    PluginSlot slot = state.slot(cfg.pluginId(), BRANCH);
    if (!mayReuse(slot, step)) {
      return Optional.empty();
    }
    if (slot.number(MEASURED_STEP) != step) {
      throw new IllegalStateException(
          "step cache: the change before step " + step + " was not measured (a loop bug)");
    }
    double accumulated = slot.number(MEASURED_ACCUMULATED);
    if (accumulated >= cfg.threshold()) {
      return Optional.empty();
    }
    return Optional.of(
        () -> {
          PluginState next = state.copy();
          PluginSlot mine = next.slot(cfg.pluginId(), BRANCH);
          Tensor prediction = TaylorSeries.predict(ops, mine, cfg.taylorSeerOrder(), step);
          mine.put("input", latents);
          mine.put("accumulated", accumulated);
          mine.add("consecutive", 1);
          mine.add("count_cached_steps", 1);
          return StepResult.of(prediction, next);
        });
  }

  /**
   * The state with the change from the last step's input to {@code latents} (the input of {@code
   * step}) measured into it, when {@code step} may be reused at all; {@code state} itself
   * otherwise. The loop calls it as it folds a step in, where device work belongs.
   */
  PluginState measured(Backend ops, PluginState state, Tensor latents, int step) {
    PluginSlot slot = state.slot(cfg.pluginId(), BRANCH);
    if (!mayReuse(slot, step)) {
      return state;
    }
    double accumulated =
        slot.number("accumulated") + RelativeL1.of(ops, latents, slot.tensor("input"));
    PluginState next = state.copy();
    PluginSlot mine = next.slot(cfg.pluginId(), BRANCH);
    mine.put(MEASURED_STEP, step);
    mine.put(MEASURED_ACCUMULATED, accumulated);
    return next;
  }

  /** Records a step the transformer computed (into {@code work}, a step's copy of the state). */
  void remember(Backend ops, PluginState work, Tensor latents, Tensor prediction, int step) {
    PluginSlot slot = work.slot(cfg.pluginId(), BRANCH);
    TaylorSeries.remember(ops, slot, cfg.taylorSeerOrder(), prediction, step);
    slot.put("input", latents);
    slot.put("accumulated", 0);
    slot.put("consecutive", 0);
    slot.add("count_computed_steps", 1);
  }

  private boolean mayReuse(PluginSlot slot, int step) {
    if (cfg.threshold() <= 0 || step < cfg.warmupSteps() || TaylorSeries.isEmpty(slot)) {
      return false;
    }
    if (cfg.maxCachedSteps() >= 0 && slot.number("count_cached_steps") >= cfg.maxCachedSteps()) {
      return false;
    }
    return cfg.maxConsecutiveCachedSteps() < 0
        || slot.number("consecutive") < cfg.maxConsecutiveCachedSteps();
  }
}
