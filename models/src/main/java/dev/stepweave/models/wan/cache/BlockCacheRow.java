package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.PluginSlot;

/**
 * One batch row of a block-cached transformer forward: one request's CFG branch, with that
 * request's settings, its own slot and the denoising step it computes. Rows of different requests
 * share one forward only when they agree on the blocks always computed ({@code fn}, {@code bn}).
 */
public record BlockCacheRow(ResidualCacheConfig cfg, PluginSlot slot, int step) {}
