package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.ResidualNorm;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * One Wan DiT block: modulated self-attention with RoPE, cross-attention to the text (and the image
 * tokens, for image-to-video), modulated feed-forward, each added back to the residual stream (the
 * modulated ones through a gate). The modulation is per sample, or per token for per-token
 * timesteps.
 */
final class WanTransformerBlock {
  // Order of the six vectors in scale_shift_table and in each block's share of timestep_proj.
  private static final int SHIFT = 0;
  private static final int SCALE = 1;
  private static final int GATE = 2;
  private static final int FFN_SHIFT = 3;
  private static final int FFN_SCALE = 4;
  private static final int FFN_GATE = 5;

  private final WanAttention selfAttention;
  private final WanAttention crossAttention;
  private final WanFeedForward feedForward;
  private final Tensor crossNormWeight; // null when cross_attn_norm is false
  private final Tensor crossNormBias;
  private final Tensor scaleShiftTable; // [1, 6, dim]
  private final float eps;

  private WanTransformerBlock(
      WanAttention selfAttention,
      WanAttention crossAttention,
      WanFeedForward feedForward,
      Tensor crossNormWeight,
      Tensor crossNormBias,
      Tensor scaleShiftTable,
      float eps) {
    this.selfAttention = selfAttention;
    this.crossAttention = crossAttention;
    this.feedForward = feedForward;
    this.crossNormWeight = crossNormWeight;
    this.crossNormBias = crossNormBias;
    this.scaleShiftTable = scaleShiftTable;
    this.eps = eps;
  }

  /** Takes one {@code blocks.<i>.*} group. */
  static WanTransformerBlock load(WanTransformerConfig cfg, Weights weights) {
    int dim = cfg.innerDim();
    return new WanTransformerBlock(
        WanAttention.load(cfg, weights.scope("attn1")),
        WanAttention.loadCross(cfg, weights.scope("attn2")),
        WanFeedForward.block(cfg, weights.scope("ffn")),
        cfg.crossAttnNorm() ? weights.take("norm2.weight", dim) : null,
        cfg.crossAttnNorm() ? weights.take("norm2.bias", dim) : null,
        weights.take("scale_shift_table", 1, 6, dim),
        (float) cfg.eps());
  }

  /**
   * @param x residual stream {@code [B, L, dim]}
   * @param context text context {@code [B, S, dim]}
   * @param imageContext image tokens {@code [B, S_img, dim]}, or null without image conditioning
   * @param timestepProj modulation embedding {@code [B, T, 6, dim]}, T = 1 or L
   * @param adapters each row's adapters
   * @return the updated residual stream {@code [B, L, dim]}
   */
  Tensor apply(
      Backend backend,
      Tensor x,
      Tensor context,
      Tensor imageContext,
      Tensor timestepProj,
      RotaryTables rope,
      AdapterRows adapters) {
    Tensor[] mod = Modulation.vectors(backend, scaleShiftTable, timestepProj);

    // Each residual update is fused with the norm that reads its result (one pass, not two).
    Tensor h = backend.modulatedLayerNorm(x, mod[SHIFT], mod[SCALE], eps);
    Tensor attended = selfAttention.selfAttention(backend, h, rope, adapters);
    if (crossNormWeight == null) {
      x = backend.gatedResidual(x, attended, mod[GATE]);
      h = x;
    } else {
      ResidualNorm r =
          backend.residualLayerNorm(x, attended, mod[GATE], crossNormWeight, crossNormBias, eps);
      x = r.residual();
      h = r.normed();
    }

    Tensor crossed = crossAttention.crossAttention(backend, h, context, imageContext, adapters);
    ResidualNorm r =
        backend.residualModulatedLayerNorm(x, crossed, null, mod[FFN_SHIFT], mod[FFN_SCALE], eps);
    return backend.gatedResidual(
        r.residual(), feedForward.apply(backend, r.normed(), adapters), mod[FFN_GATE]);
  }

  /** Adds this block's linear layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    selfAttention.collectLayers(out);
    crossAttention.collectLayers(out);
    feedForward.collectLayers(out);
  }
}
