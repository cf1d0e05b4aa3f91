package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.ActivePlugin;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Plugin;
import dev.stepweave.core.extend.PluginState;
import dev.stepweave.core.extend.StepInfo;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.tensor.Backend;
import java.util.List;

/**
 * The extension hooks of one request's denoise loop, assembled when the loop starts: its block
 * cache (if the request turned one on) and the deployment's observers. The per-request state the
 * hooks read and write is the loop state's {@link PluginState}, passed in on every call; this
 * object holds configuration only.
 */
public final class DenoiseHooks {
  public static final DenoiseHooks NONE = new DenoiseHooks(null, Extensions.NONE);

  private final ResidualCacheConfig blockCache;
  private final Extensions extensions;

  private DenoiseHooks(ResidualCacheConfig blockCache, Extensions extensions) {
    this.blockCache = blockCache;
    this.extensions = extensions;
  }

  /**
   * The hooks for a request's admitted plugins.
   *
   * @throws IllegalArgumentException for a plugin the Wan denoise loop does not implement
   */
  public static DenoiseHooks assemble(List<ActivePlugin> active, Extensions extensions) {
    ResidualCacheConfig blockCache = null;
    for (ActivePlugin a : active) {
      if (a.plugin().point() == Plugin.InterceptionPoint.BLOCKS
          && a.plugin() instanceof BlockCachePlugin) {
        blockCache = ResidualCacheConfig.of(a);
      } else {
        throw new IllegalArgumentException(
            "the Wan denoise loop does not implement plugin '" + a.id() + "'");
      }
    }
    return new DenoiseHooks(blockCache, extensions);
  }

  /**
   * The block hooks of one transformer forward whose batch rows are the given CFG branches of this
   * request ("cond", "uncond").
   */
  public BlockHooks blocks(PluginState state, List<String> branches, int step, Backend ops) {
    if (blockCache == null) {
      return BlockHooks.NONE;
    }
    return new ResidualCache(
        blockCache,
        ops,
        branches.stream().map(b -> state.slot(blockCache.pluginId(), b)).toList(),
        step);
  }

  /** The observers' tap sink for a step, {@link TapSink#NONE} when none wants taps. */
  public TapSink taps(StepInfo step, Backend ops) {
    return extensions.tapsFor(step, ops::download);
  }
}
