package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.ParamSchema;
import dev.stepweave.core.extend.ParamSchema.Param;
import dev.stepweave.core.extend.Plugin;
import java.util.List;

/**
 * A TeaCache-style step cache of the Wan denoise loop: a step whose transformer input changed
 * little since the last computed step skips the transformer and reuses that step's guided
 * prediction (or extrapolates it, {@code taylorseer_order} 1–2). The signal is the relative L1
 * change of the latents between consecutive steps, accumulated since the last computed step and
 * compared with {@code threshold}.
 */
public record StepCachePlugin(String id) implements Plugin {
  public static final StepCachePlugin STEPCACHE = new StepCachePlugin("stepcache");

  @Override
  public InterceptionPoint point() {
    return InterceptionPoint.STEP;
  }

  @Override
  public boolean distributionAltering() {
    return true;
  }

  @Override
  public boolean reusesAcrossSteps() {
    return true;
  }

  @Override
  public ParamSchema schema() {
    return new ParamSchema(
        List.of(
            Param.number(
                "threshold",
                0,
                10,
                0.1,
                "accumulated relative L1 change of the latents below which a step is reused"),
            Param.integer("warmup_steps", 0, 1000, 2, "first steps always computed"),
            Param.integer(
                "max_cached_steps", -1, 1000, -1, "steps that may be reused (-1: no limit)"),
            Param.integer(
                "max_consecutive_cached_steps",
                -1,
                1000,
                -1,
                "reused steps in a row before one is computed (-1: no limit)"),
            Param.integer("taylorseer_order", 0, 2, 0, "0: reuse; 1–2: extrapolate")));
  }
}
