package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.ActivePlugin;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Plugin;
import dev.stepweave.core.extend.PluginState;
import dev.stepweave.core.extend.StepInfo;
import dev.stepweave.core.loop.WorkCall;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.Optional;

/**
 * The extension hooks of one request's denoise loop, assembled when the loop starts: its block
 * cache and step cache (if the request turned them on) and the deployment's observers. The
 * per-request state the hooks read and write is the loop state's {@link PluginState}, passed in on
 * every call; this object holds configuration only.
 */
public final class DenoiseHooks {
  public static final DenoiseHooks NONE = new DenoiseHooks(null, null, Extensions.NONE);

  private final ResidualCacheConfig blockCache;
  private final StepCache stepCache;
  private final Extensions extensions;

  private DenoiseHooks(ResidualCacheConfig blockCache, StepCache stepCache, Extensions extensions) {
    this.blockCache = blockCache;
    this.stepCache = stepCache;
    this.extensions = extensions;
  }

  /**
   * The hooks for a request's admitted plugins.
   *
   * @throws IllegalArgumentException for a plugin the Wan denoise loop does not implement
   */
  public static DenoiseHooks assemble(List<ActivePlugin> active, Extensions extensions) {
    ResidualCacheConfig blockCache = null;
    StepCache stepCache = null;
    for (ActivePlugin a : active) {
      if (a.plugin().point() == Plugin.InterceptionPoint.BLOCKS
          && a.plugin() instanceof BlockCachePlugin) {
        blockCache = ResidualCacheConfig.of(a);
      } else if (a.plugin().point() == Plugin.InterceptionPoint.STEP
          && a.plugin() instanceof StepCachePlugin) {
        stepCache = new StepCache(StepCacheConfig.of(a));
      } else {
        throw new IllegalArgumentException(
            "the Wan denoise loop does not implement plugin '" + a.id() + "'");
      }
    }
    return new DenoiseHooks(blockCache, stepCache, extensions);
  }

  /** Whether a step cache may reuse predictions instead of running the transformer. */
  public boolean skipsSteps() {
    return stepCache != null;
  }

  /**
   * What a forward's batch rows must agree on to share one forward: the blocks always computed
   * ({@code "F8B0"}), or {@code "none"} without a block cache.
   */
  public String blockLayout() {
    return blockCache == null ? "none" : "F" + blockCache.fn() + "B" + blockCache.bn();
  }

  /**
   * This request's batch rows for the given CFG branches ("cond", "uncond") at {@code step}, each
   * with its slot in {@code state}; empty without a block cache.
   */
  public List<BlockCacheRow> rows(PluginState state, List<String> branches, int step) {
    if (blockCache == null) {
      return List.of();
    }
    return branches.stream()
        .map(b -> new BlockCacheRow(blockCache, state.slot(blockCache.pluginId(), b), step))
        .toList();
  }

  /**
   * The block hooks of one transformer forward whose batch rows are {@code rows}, in order (of one
   * request or several); {@link BlockHooks#NONE} when there are none.
   */
  public static BlockHooks blocks(List<BlockCacheRow> rows, Backend ops) {
    return rows.isEmpty() ? BlockHooks.NONE : new ResidualCache(ops, rows);
  }

  /**
   * The call that reuses a cached prediction at {@code step} instead of running the transformer, or
   * empty when the step must compute (always, without a step cache).
   */
  public Optional<WorkCall> reusedStep(Backend ops, PluginState state, Tensor latents, int step) {
    return stepCache == null ? Optional.empty() : stepCache.reuse(ops, state, latents, step);
  }

  /**
   * The plugin state after a step was folded in and {@code latents} are the input of {@code
   * nextStep}: with a step cache, the change it decides on is measured here (device work belongs in
   * the fold, never in planning); without one, {@code state} itself.
   */
  public PluginState afterStep(Backend ops, PluginState state, Tensor latents, int nextStep) {
    return stepCache == null ? state : stepCache.measured(ops, state, latents, nextStep);
  }

  /**
   * Records a prediction the transformer computed at {@code step} from {@code latents} into {@code
   * work} (a step's copy of the plugin state); nothing without a step cache.
   */
  public void computedStep(
      Backend ops, PluginState work, Tensor latents, Tensor prediction, int step) {
    if (stepCache != null) {
      stepCache.remember(ops, work, latents, prediction, step);
    }
  }

  /** The observers' tap sink for a step, {@link TapSink#NONE} when none wants taps. */
  public TapSink taps(StepInfo step, Backend ops) {
    return extensions.tapsFor(step, ops::download);
  }
}
