package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * diffusers' {@code FeedForward} as Wan uses it: linear {@code net.0.proj}, GELU, linear {@code
 * net.2}. The blocks' MLP uses the tanh approximation, the image embedder's the exact GELU.
 */
final class WanFeedForward {
  private final Linear up;
  private final Linear down;
  private final boolean tanhGelu;

  private WanFeedForward(Linear up, Linear down, boolean tanhGelu) {
    this.up = up;
    this.down = down;
    this.tanhGelu = tanhGelu;
  }

  /** A block's MLP: {@code dim -> ffn_dim -> dim}, tanh GELU, under {@code weights}. */
  static WanFeedForward block(WanTransformerConfig cfg, Weights weights) {
    return load(weights, cfg.innerDim(), cfg.ffnDim(), cfg.innerDim(), true);
  }

  /**
   * Takes {@code net.0.proj [hidden, in]} and {@code net.2 [out, hidden]} under {@code weights}.
   */
  static WanFeedForward load(Weights weights, int in, int hidden, int out, boolean tanhGelu) {
    return new WanFeedForward(
        Linear.take(weights, "net.0.proj", in, hidden),
        Linear.take(weights, "net.2", hidden, out),
        tanhGelu);
  }

  Tensor apply(Backend backend, Tensor x, AdapterRows adapters) {
    return down.apply(backend, up.applyGelu(backend, x, adapters, tanhGelu), adapters);
  }

  /** Adds this MLP's layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    out.put(up.name(), up);
    out.put(down.name(), down);
  }
}
