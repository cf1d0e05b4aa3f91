package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.List;

/**
 * Multi-head attention of a Wan block. Queries and keys are RMS-normalised over the full inner
 * width (all heads together) before they are split into heads; self-attention then rotates them
 * with the 3-axis RoPE, cross-attention does not. With image conditioning the cross-attention's
 * queries also attend the image tokens through their own key/value projections ({@code add_k_proj},
 * {@code add_v_proj}, keys normalised by {@code norm_added_k}), and the two attention results are
 * summed before the output projection.
 */
final class WanAttention {
  private static final int Q = 0;
  private static final int K = 1;
  private static final int V = 2;

  private final LinearStack qkv; // to_q, to_k, to_v, stacked: one GEMM per input
  private final Linear toOut;
  private final Tensor normQ;
  private final Tensor normK;
  private final ImageKeys image; // null unless the cross-attention also attends image tokens
  private final int heads;
  private final float eps;
  private final float scale;

  private WanAttention(
      LinearStack qkv,
      Linear toOut,
      Tensor normQ,
      Tensor normK,
      ImageKeys image,
      int heads,
      int headDim,
      float eps) {
    this.qkv = qkv;
    this.toOut = toOut;
    this.normQ = normQ;
    this.normK = normK;
    this.image = image;
    this.heads = heads;
    this.eps = eps;
    this.scale = (float) (1.0 / Math.sqrt(headDim));
  }

  /** The key and value projections of image tokens and the keys' RMS norm weight. */
  private record ImageKeys(Linear toK, Linear toV, Tensor normK) {}

  /** Takes {@code to_q/to_k/to_v/to_out.0} and {@code norm_q/norm_k} under {@code weights}. */
  static WanAttention load(WanTransformerConfig cfg, Weights weights) {
    return load(cfg, weights, null);
  }

  /**
   * A block's cross-attention: also takes {@code add_k_proj/add_v_proj} and {@code norm_added_k}
   * when the config has image conditioning.
   */
  static WanAttention loadCross(WanTransformerConfig cfg, Weights weights) {
    if (cfg.image() == null) {
      return load(cfg, weights, null);
    }
    int dim = cfg.innerDim();
    int in = cfg.image().addedKvProjDim();
    // diffusers drops a stored norm_added_q on load (_keys_to_ignore_on_load_unexpected): its
    // processor never used one.
    if (weights.has("norm_added_q.weight")) {
      weights.ignore("norm_added_q.weight");
    }
    return load(
        cfg,
        weights,
        new ImageKeys(
            Linear.take(weights, "add_k_proj", in, dim),
            Linear.take(weights, "add_v_proj", in, dim),
            weights.take("norm_added_k.weight", dim)));
  }

  private static WanAttention load(WanTransformerConfig cfg, Weights weights, ImageKeys image) {
    int dim = cfg.innerDim();
    return new WanAttention(
        LinearStack.take(weights, dim, dim, "to_q", "to_k", "to_v"),
        Linear.take(weights, "to_out.0", dim, dim),
        weights.take("norm_q.weight", dim),
        weights.take("norm_k.weight", dim),
        image,
        cfg.numAttentionHeads(),
        cfg.attentionHeadDim(),
        (float) cfg.eps());
  }

  /** Self-attention over {@code x [B, L, dim]} with rotary positions. */
  Tensor selfAttention(Backend backend, Tensor x, RotaryTables rope, AdapterRows adapters) {
    List<Tensor> p = qkv.apply(backend, x, adapters, Q, V + 1);
    Tensor q = backend.rmsNormRope(p.get(Q), normQ, eps, heads, rope.cos(), rope.sin());
    Tensor k = backend.rmsNormRope(p.get(K), normK, eps, heads, rope.cos(), rope.sin());
    Tensor heads = backend.attention(q, k, splitHeads(p.get(V)), null, scale);
    return toOut.apply(backend, mergeHeads(heads), adapters);
  }

  /**
   * Attention of {@code x [B, L, dim]} over {@code context [B, S, dim]}, without positions, plus
   * (with image conditioning) the same queries' attention over {@code imageContext [B, S_img,
   * dim]}.
   *
   * @param imageContext the tokens attended through the image projections, or null for none (then
   *     this is the text-to-video cross-attention)
   */
  Tensor crossAttention(
      Backend backend, Tensor x, Tensor context, Tensor imageContext, AdapterRows adapters) {
    Tensor q = splitHeads(backend.rmsNorm(qkv.layer(Q).apply(backend, x, adapters), normQ, eps));
    List<Tensor> kv = qkv.apply(backend, context, adapters, K, V + 1);
    Tensor heads =
        backend.attention(
            q,
            splitHeads(backend.rmsNorm(kv.get(0), normK, eps)),
            splitHeads(kv.get(1)),
            null,
            scale);
    if (imageContext != null) {
      Tensor k =
          splitHeads(
              backend.rmsNorm(
                  image.toK().apply(backend, imageContext, adapters), image.normK(), eps));
      Tensor v = splitHeads(image.toV().apply(backend, imageContext, adapters));
      heads = backend.add(heads, backend.attention(q, k, v, null, scale));
    }
    return toOut.apply(backend, mergeHeads(heads), adapters);
  }

  /** Adds this attention's layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    for (Linear l : qkv.layers()) {
      out.put(l.name(), l);
    }
    out.put(toOut.name(), toOut);
    if (image != null) {
      out.put(image.toK().name(), image.toK());
      out.put(image.toV().name(), image.toV());
    }
  }

  /** {@code [B, L, H·D] -> [B, L, H, D]} (a view). */
  private Tensor splitHeads(Tensor t) {
    return t.reshape(t.dim(0), t.dim(1), heads, -1);
  }

  private static Tensor mergeHeads(Tensor t) {
    return t.reshape(t.dim(0), t.dim(1), -1);
  }
}
