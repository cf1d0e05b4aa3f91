package dev.stepweave.models.text;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * UMT5 self-attention: bias-free projections, no 1/sqrt(d) scaling (T5 folds it into the weights'
 * initialisation), and a learned relative position bias per head. Unlike T5, where only the first
 * layer owns the bias table and the others reuse it, every UMT5 layer has its own.
 */
final class UMT5Attention {
  private static final float UNSCALED = 1f;

  private final Backend backend;
  private final int numHeads;
  private final int headDim;
  private final Tensor q;
  private final Tensor k;
  private final Tensor v;
  private final Tensor o;
  private final Tensor relativeBias; // [buckets, heads]

  private UMT5Attention(
      Backend backend,
      int numHeads,
      int headDim,
      Tensor q,
      Tensor k,
      Tensor v,
      Tensor o,
      Tensor relativeBias) {
    this.backend = backend;
    this.numHeads = numHeads;
    this.headDim = headDim;
    this.q = q;
    this.k = k;
    this.v = v;
    this.o = o;
    this.relativeBias = relativeBias;
  }

  /** Loads {@code q, k, v, o} and {@code relative_attention_bias} from {@code w}. */
  static UMT5Attention load(UMT5Config config, Weights w) {
    int inner = config.innerDim();
    int model = config.dModel();
    return new UMT5Attention(
        w.backend(),
        config.numHeads(),
        config.dKv(),
        w.take("q.weight", inner, model),
        w.take("k.weight", inner, model),
        w.take("v.weight", inner, model),
        w.take("o.weight", model, inner),
        w.take(
            "relative_attention_bias.weight",
            config.relativeAttentionNumBuckets(),
            config.numHeads()));
  }

  /**
   * @param x {@code [B, S, d_model]}, already normalised
   * @param buckets relative position bucket ids {@code [S, S]} on the backend
   * @param maskBias additive key mask {@code [B, 1, 1, S]} (0 or a large negative), or null
   * @return {@code [B, S, d_model]}
   */
  Tensor forward(Tensor x, Tensor buckets, Tensor maskBias) {
    int batch = x.dim(0);
    int length = x.dim(1);
    Tensor query = heads(backend.linear(x, q, null), batch, length);
    Tensor key = heads(backend.linear(x, k, null), batch, length);
    Tensor value = heads(backend.linear(x, v, null), batch, length);
    Tensor bias = positionBias(buckets);
    if (maskBias != null) {
      bias = backend.add(bias, maskBias);
    }
    Tensor attended = backend.attention(query, key, value, bias, UNSCALED);
    Tensor merged = backend.contiguous(attended).reshape(batch, length, numHeads * headDim);
    return backend.linear(merged, o, null);
  }

  /** This layer's bias table looked up by bucket: {@code [1, H, S, S]}. */
  private Tensor positionBias(Tensor buckets) {
    return backend.embedding(relativeBias, buckets).permute(2, 0, 1).unsqueeze(0);
  }

  private Tensor heads(Tensor projected, int batch, int length) {
    return backend.contiguous(projected).reshape(batch, length, numHeads, headDim);
  }
}
