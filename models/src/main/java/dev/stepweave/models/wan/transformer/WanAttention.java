package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * Multi-head attention of a Wan block. Queries and keys are RMS-normalised over the full inner
 * width (all heads together) before they are split into heads; self-attention then rotates them
 * with the 3-axis RoPE, cross-attention does not.
 */
final class WanAttention {
  private final Linear toQ;
  private final Linear toK;
  private final Linear toV;
  private final Linear toOut;
  private final Tensor normQ;
  private final Tensor normK;
  private final int heads;
  private final float eps;
  private final float scale;

  private WanAttention(
      Linear toQ,
      Linear toK,
      Linear toV,
      Linear toOut,
      Tensor normQ,
      Tensor normK,
      int heads,
      int headDim,
      float eps) {
    this.toQ = toQ;
    this.toK = toK;
    this.toV = toV;
    this.toOut = toOut;
    this.normQ = normQ;
    this.normK = normK;
    this.heads = heads;
    this.eps = eps;
    this.scale = (float) (1.0 / Math.sqrt(headDim));
  }

  /** Takes {@code to_q/to_k/to_v/to_out.0} and {@code norm_q/norm_k} under {@code weights}. */
  static WanAttention load(WanTransformerConfig cfg, Weights weights) {
    int dim = cfg.innerDim();
    return new WanAttention(
        Linear.take(weights, "to_q", dim, dim),
        Linear.take(weights, "to_k", dim, dim),
        Linear.take(weights, "to_v", dim, dim),
        Linear.take(weights, "to_out.0", dim, dim),
        weights.take("norm_q.weight", dim),
        weights.take("norm_k.weight", dim),
        cfg.numAttentionHeads(),
        cfg.attentionHeadDim(),
        (float) cfg.eps());
  }

  /** Self-attention over {@code x [B, L, dim]} with rotary positions. */
  Tensor selfAttention(Backend backend, Tensor x, RotaryTables rope, AdapterRows adapters) {
    Tensor q =
        backend.rmsNormRope(
            toQ.apply(backend, x, adapters), normQ, eps, heads, rope.cos(), rope.sin());
    Tensor k =
        backend.rmsNormRope(
            toK.apply(backend, x, adapters), normK, eps, heads, rope.cos(), rope.sin());
    return attend(backend, q, k, values(backend, x, adapters), adapters);
  }

  /** Attention of {@code x [B, L, dim]} over {@code context [B, S, dim]}, without positions. */
  Tensor crossAttention(Backend backend, Tensor x, Tensor context, AdapterRows adapters) {
    return attend(
        backend,
        queries(backend, x, adapters),
        keys(backend, context, adapters),
        values(backend, context, adapters),
        adapters);
  }

  private Tensor queries(Backend backend, Tensor x, AdapterRows adapters) {
    return splitHeads(backend.rmsNorm(toQ.apply(backend, x, adapters), normQ, eps));
  }

  private Tensor keys(Backend backend, Tensor source, AdapterRows adapters) {
    return splitHeads(backend.rmsNorm(toK.apply(backend, source, adapters), normK, eps));
  }

  private Tensor values(Backend backend, Tensor source, AdapterRows adapters) {
    return splitHeads(toV.apply(backend, source, adapters));
  }

  private Tensor attend(Backend backend, Tensor q, Tensor k, Tensor v, AdapterRows adapters) {
    Tensor heads = backend.attention(q, k, v, null, scale);
    return toOut.apply(backend, mergeHeads(heads), adapters);
  }

  /** Adds this attention's layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    for (Linear l : new Linear[] {toQ, toK, toV, toOut}) {
      out.put(l.name(), l);
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
