package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.ParamSchema;
import dev.stepweave.core.extend.ParamSchema.Param;
import dev.stepweave.core.extend.Plugin;
import java.util.ArrayList;
import java.util.List;

/**
 * The cache-dit style block caches of the Wan transformer. DBCache always computes the first {@code
 * fn} and last {@code bn} blocks and reuses the middle blocks' residual from an earlier step while
 * the first blocks' residual changes by less than {@code threshold} (relative L1); FBCache is
 * DBCache with {@code fn = 1, bn = 0}. {@code taylorseer_order} 1–2 extrapolates the cached
 * residual over steps (TaylorSeer) instead of reusing it as is.
 *
 * @param id the plugin id
 * @param fixedFn the front block count when fixed (FBCache), else -1 (a parameter)
 * @param fixedBn the back block count when fixed, else -1
 */
public record BlockCachePlugin(String id, int fixedFn, int fixedBn) implements Plugin {
  public static final BlockCachePlugin DBCACHE = new BlockCachePlugin("dbcache", -1, -1);
  public static final BlockCachePlugin FBCACHE = new BlockCachePlugin("fbcache", 1, 0);

  @Override
  public InterceptionPoint point() {
    return InterceptionPoint.BLOCKS;
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
    List<Param> params = new ArrayList<>();
    if (fixedFn < 0) {
      params.add(Param.integer("fn", 1, 1000, 8, "front blocks always computed"));
      params.add(Param.integer("bn", 0, 1000, 0, "back blocks always computed"));
    }
    params.add(
        Param.number(
            "threshold",
            0,
            10,
            0.08,
            "relative L1 change of the front residual below which to reuse"));
    params.add(Param.integer("warmup_steps", 0, 1000, 2, "first steps always computed"));
    params.add(
        Param.integer("max_cached_steps", -1, 1000, -1, "steps that may reuse (-1: no limit)"));
    params.add(
        Param.integer(
            "max_consecutive_cached_steps",
            -1,
            1000,
            -1,
            "reusing steps in a row before one is computed (-1: no limit)"));
    params.add(Param.integer("taylorseer_order", 0, 2, 0, "0: reuse; 1–2: extrapolate"));
    return new ParamSchema(params);
  }
}
