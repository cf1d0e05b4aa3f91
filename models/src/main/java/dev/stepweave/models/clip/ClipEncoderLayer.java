package dev.stepweave.models.clip;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * One pre-norm encoder layer of the CLIP vision tower: {@code x + attn(layer_norm1(x))}, then
 * {@code x + fc2(act(fc1(layer_norm2(x))))}. Self-attention is unmasked and bidirectional, with
 * biased q/k/v/out projections and the standard {@code head_dim^-0.5} scale.
 */
final class ClipEncoderLayer {
  private final Backend backend;
  private final ClipVisionConfig config;
  private final float scale;
  private final Norm norm1;
  private final Linear q;
  private final Linear k;
  private final Linear v;
  private final Linear out;
  private final Norm norm2;
  private final Linear fc1;
  private final Linear fc2;

  private record Linear(Tensor weight, Tensor bias) {}

  private record Norm(Tensor weight, Tensor bias) {}

  private ClipEncoderLayer(
      Backend backend,
      ClipVisionConfig config,
      Norm norm1,
      Linear q,
      Linear k,
      Linear v,
      Linear out,
      Norm norm2,
      Linear fc1,
      Linear fc2) {
    this.backend = backend;
    this.config = config;
    this.scale = (float) (1.0 / Math.sqrt(config.headDim()));
    this.norm1 = norm1;
    this.q = q;
    this.k = k;
    this.v = v;
    this.out = out;
    this.norm2 = norm2;
    this.fc1 = fc1;
    this.fc2 = fc2;
  }

  /** Loads {@code layer_norm1/2}, {@code self_attn.{q,k,v,out}_proj} and {@code mlp.fc1/2}. */
  static ClipEncoderLayer load(ClipVisionConfig config, Weights w) {
    int hidden = config.hiddenSize();
    int inner = config.intermediateSize();
    Weights attention = w.scope("self_attn");
    Weights mlp = w.scope("mlp");
    return new ClipEncoderLayer(
        w.backend(),
        config,
        norm(w.scope("layer_norm1"), hidden),
        linear(attention.scope("q_proj"), hidden, hidden),
        linear(attention.scope("k_proj"), hidden, hidden),
        linear(attention.scope("v_proj"), hidden, hidden),
        linear(attention.scope("out_proj"), hidden, hidden),
        norm(w.scope("layer_norm2"), hidden),
        linear(mlp.scope("fc1"), inner, hidden),
        linear(mlp.scope("fc2"), hidden, inner));
  }

  /** Checks this layer's tensors against the config and claims them without loading them. */
  static void skip(ClipVisionConfig config, Weights w) {
    int hidden = config.hiddenSize();
    int inner = config.intermediateSize();
    for (String norm : new String[] {"layer_norm1", "layer_norm2"}) {
      w.skip(norm + ".weight", hidden);
      w.skip(norm + ".bias", hidden);
    }
    for (String proj : new String[] {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      w.skip("self_attn." + proj + ".weight", hidden, hidden);
      w.skip("self_attn." + proj + ".bias", hidden);
    }
    w.skip("mlp.fc1.weight", inner, hidden);
    w.skip("mlp.fc1.bias", inner);
    w.skip("mlp.fc2.weight", hidden, inner);
    w.skip("mlp.fc2.bias", hidden);
  }

  /**
   * @param x {@code [B, L, hidden]}
   * @return {@code [B, L, hidden]}
   */
  Tensor forward(Tensor x) {
    Tensor h = backend.add(x, attention(layerNorm(x, norm1)));
    Tensor inner = config.hiddenAct().apply(backend, apply(fc1, layerNorm(h, norm2)));
    return backend.add(h, apply(fc2, inner));
  }

  private Tensor attention(Tensor x) {
    int batch = x.dim(0);
    int length = x.dim(1);
    Tensor attended =
        backend.attention(
            heads(apply(q, x), batch, length),
            heads(apply(k, x), batch, length),
            heads(apply(v, x), batch, length),
            null,
            scale);
    return apply(out, backend.contiguous(attended).reshape(batch, length, config.hiddenSize()));
  }

  private Tensor heads(Tensor projected, int batch, int length) {
    return backend
        .contiguous(projected)
        .reshape(batch, length, config.numAttentionHeads(), config.headDim());
  }

  private Tensor layerNorm(Tensor x, Norm norm) {
    return backend.layerNorm(x, norm.weight(), norm.bias(), config.layerNormEps());
  }

  private Tensor apply(Linear layer, Tensor x) {
    return backend.linear(x, layer.weight(), layer.bias());
  }

  private static Linear linear(Weights w, int out, int in) {
    return new Linear(w.take("weight", out, in), w.take("bias", out));
  }

  private static Norm norm(Weights w, int dim) {
    return new Norm(w.take("weight", dim), w.take("bias", dim));
  }
}
