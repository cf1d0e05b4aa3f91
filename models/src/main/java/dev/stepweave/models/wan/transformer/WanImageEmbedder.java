package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * diffusers' {@code WanImageEmbedding}: image-encoder states to image tokens of the model's width —
 * the learned position embedding when the config has one, LayerNorm {@code norm1}, the MLP {@code
 * ff} (exact GELU), LayerNorm {@code norm2}. The norms are computed in F32 (diffusers' {@code
 * FP32LayerNorm}) on every backend.
 */
final class WanImageEmbedder {
  // FP32LayerNorm's own default: the config's eps is not passed to these two norms.
  private static final float NORM_EPS = 1e-5f;

  private final Tensor positions; // [1, pos_embed_seq_len, image_dim], or null
  private final Tensor norm1Weight;
  private final Tensor norm1Bias;
  private final WanFeedForward feedForward;
  private final Tensor norm2Weight;
  private final Tensor norm2Bias;

  private WanImageEmbedder(
      Tensor positions,
      Tensor norm1Weight,
      Tensor norm1Bias,
      WanFeedForward feedForward,
      Tensor norm2Weight,
      Tensor norm2Bias) {
    this.positions = positions;
    this.norm1Weight = norm1Weight;
    this.norm1Bias = norm1Bias;
    this.feedForward = feedForward;
    this.norm2Weight = norm2Weight;
    this.norm2Bias = norm2Bias;
  }

  /** Takes the {@code condition_embedder.image_embedder.*} tensors. */
  static WanImageEmbedder load(
      WanTransformerConfig cfg, WanTransformerConfig.ImageConditioning image, Weights weights) {
    int in = image.imageDim();
    int dim = cfg.innerDim();
    Integer positions = image.posEmbedSeqLen();
    return new WanImageEmbedder(
        positions == null ? null : weights.take("pos_embed", 1, positions, in),
        weights.take("norm1.weight", in),
        weights.take("norm1.bias", in),
        WanFeedForward.load(weights.scope("ff"), in, in, dim, false),
        weights.take("norm2.weight", dim),
        weights.take("norm2.bias", dim));
  }

  /**
   * @param states {@code [B, S, image_dim]}; with a position embedding of length P, {@code [B, P,
   *     image_dim]} or the reference's {@code [2B, P/2, image_dim]} (each sample's two images as
   *     consecutive rows), which are the same memory
   * @return image tokens {@code [B, S, dim]} ({@code [B, P, dim]} with a position embedding)
   */
  Tensor apply(Backend backend, Tensor states, int batch, AdapterRows adapters) {
    Tensor x = states;
    if (positions != null) {
      x = backend.add(backend.contiguous(states).reshape(batch, -1, states.dim(2)), positions);
    }
    Tensor h = backend.layerNorm(x, norm1Weight, norm1Bias, NORM_EPS);
    h = feedForward.apply(backend, h, adapters);
    return backend.layerNorm(h, norm2Weight, norm2Bias, NORM_EPS);
  }

  /** Adds the embedder's linear layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    feedForward.collectLayers(out);
  }
}
