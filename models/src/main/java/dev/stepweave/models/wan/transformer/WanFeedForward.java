package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/** The block MLP: linear to {@code ffn_dim}, GELU (tanh approximation), linear back. */
final class WanFeedForward {
  private final Linear up;
  private final Linear down;

  private WanFeedForward(Linear up, Linear down) {
    this.up = up;
    this.down = down;
  }

  /** Takes {@code net.0.proj} and {@code net.2} under {@code weights}. */
  static WanFeedForward load(WanTransformerConfig cfg, Weights weights) {
    return new WanFeedForward(
        Linear.take(weights, "net.0.proj", cfg.innerDim(), cfg.ffnDim()),
        Linear.take(weights, "net.2", cfg.ffnDim(), cfg.innerDim()));
  }

  Tensor apply(Backend backend, Tensor x, AdapterRows adapters) {
    return down.apply(backend, up.applyGeluTanh(backend, x, adapters), adapters);
  }

  /** Adds this MLP's layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    out.put(up.name(), up);
    out.put(down.name(), down);
  }
}
