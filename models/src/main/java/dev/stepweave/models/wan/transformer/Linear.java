package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/** A dense layer with bias, {@code x @ weight^T + bias}, as torch's {@code nn.Linear}. */
record Linear(Tensor weight, Tensor bias) {

  /** Takes {@code name.weight [out, in]} and {@code name.bias [out]}. */
  static Linear take(Weights weights, String name, int in, int out) {
    Weights w = weights.scope(name);
    return new Linear(w.take("weight", out, in), w.take("bias", out));
  }

  Tensor apply(Backend backend, Tensor x) {
    return backend.linear(x, weight, bias);
  }

  /** {@code gelu(apply(x))} with the tanh approximation, fused where the backend can. */
  Tensor applyGeluTanh(Backend backend, Tensor x) {
    return backend.linearGeluTanh(x, weight, bias);
  }
}
