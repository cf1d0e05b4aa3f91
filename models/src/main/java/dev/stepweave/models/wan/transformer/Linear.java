package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * A dense layer with bias, {@code x @ weight^T + bias}, as torch's {@code nn.Linear}, named as in
 * the checkpoint ({@code blocks.0.attn1.to_q}) so adapters can find it. With adapters each batch
 * row adds its own low-rank updates to the output; the weight itself is never changed.
 */
record Linear(String name, Tensor weight, Tensor bias) {

  /** Takes {@code name.weight [out, in]} and {@code name.bias [out]}. */
  static Linear take(Weights weights, String name, int in, int out) {
    Weights w = weights.scope(name);
    return new Linear(weights.fullName(name), w.take("weight", out, in), w.take("bias", out));
  }

  int in() {
    return weight.dim(1);
  }

  int out() {
    return weight.dim(0);
  }

  Tensor apply(Backend backend, Tensor x, AdapterRows adapters) {
    return adapters.touches(name)
        ? adapters.apply(backend, name, x, weight, bias, false)
        : backend.linear(x, weight, bias);
  }

  /**
   * {@code gelu(apply(x))}, exact or with the tanh approximation; the tanh one fused where the
   * backend can (with adapters the updates land before the activation).
   */
  Tensor applyGelu(Backend backend, Tensor x, AdapterRows adapters, boolean tanhApproximation) {
    if (!tanhApproximation) {
      return backend.gelu(apply(backend, x, adapters), false);
    }
    return adapters.touches(name)
        ? adapters.apply(backend, name, x, weight, bias, true)
        : backend.linearGeluTanh(x, weight, bias);
  }
}
