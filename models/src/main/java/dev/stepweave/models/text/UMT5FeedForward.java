package dev.stepweave.models.text;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/** Gated-GELU feed-forward: {@code wo(gelu_tanh(wi_0·x) * wi_1·x)}, no biases. */
final class UMT5FeedForward {
  private final Backend backend;
  private final Tensor gate;
  private final Tensor up;
  private final Tensor down;

  private UMT5FeedForward(Backend backend, Tensor gate, Tensor up, Tensor down) {
    this.backend = backend;
    this.gate = gate;
    this.up = up;
    this.down = down;
  }

  /** Loads {@code wi_0, wi_1, wo} from {@code w}. */
  static UMT5FeedForward load(UMT5Config config, Weights w) {
    return new UMT5FeedForward(
        w.backend(),
        w.take("wi_0.weight", config.dFf(), config.dModel()),
        w.take("wi_1.weight", config.dFf(), config.dModel()),
        w.take("wo.weight", config.dModel(), config.dFf()));
  }

  Tensor forward(Tensor x) {
    Tensor gated = backend.gelu(backend.linear(x, gate, null), true);
    return backend.linear(backend.mul(gated, backend.linear(x, up, null)), down, null);
  }
}
