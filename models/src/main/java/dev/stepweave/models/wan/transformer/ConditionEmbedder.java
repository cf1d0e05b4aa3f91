package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * Turns the timestep and the text-encoder states into what every block consumes: the time
 * embedding, its 6-way modulation projection, and the text context in the model's width.
 */
final class ConditionEmbedder {
  private final TimestepSinusoid sinusoid;
  private final Linear timeLinear1;
  private final Linear timeLinear2;
  private final Linear timeProj;
  private final Linear textLinear1;
  private final Linear textLinear2;

  /** The three conditioning tensors: {@code [B, dim]}, {@code [B, 6·dim]}, {@code [B, S, dim]}. */
  record Conditions(Tensor temb, Tensor timestepProj, Tensor context) {}

  private ConditionEmbedder(
      TimestepSinusoid sinusoid,
      Linear timeLinear1,
      Linear timeLinear2,
      Linear timeProj,
      Linear textLinear1,
      Linear textLinear2) {
    this.sinusoid = sinusoid;
    this.timeLinear1 = timeLinear1;
    this.timeLinear2 = timeLinear2;
    this.timeProj = timeProj;
    this.textLinear1 = textLinear1;
    this.textLinear2 = textLinear2;
  }

  /** Takes the {@code condition_embedder.*} tensors. */
  static ConditionEmbedder load(WanTransformerConfig cfg, Weights weights) {
    int dim = cfg.innerDim();
    Weights time = weights.scope("time_embedder");
    Weights text = weights.scope("text_embedder");
    return new ConditionEmbedder(
        TimestepSinusoid.create(weights.backend(), cfg.freqDim()),
        Linear.take(time, "linear_1", cfg.freqDim(), dim),
        Linear.take(time, "linear_2", dim, dim),
        Linear.take(weights, "time_proj", dim, 6 * dim),
        Linear.take(text, "linear_1", cfg.textDim(), dim),
        Linear.take(text, "linear_2", dim, dim));
  }

  Conditions apply(Backend backend, Tensor timesteps, Tensor textStates, AdapterRows adapters) {
    Tensor features = sinusoid.apply(backend, timesteps);
    Tensor temb =
        timeLinear2.apply(
            backend, backend.silu(timeLinear1.apply(backend, features, adapters)), adapters);
    Tensor timestepProj = timeProj.apply(backend, backend.silu(temb), adapters);
    Tensor context =
        textLinear2.apply(
            backend,
            backend.gelu(textLinear1.apply(backend, textStates, adapters), true),
            adapters);
    return new Conditions(temb, timestepProj, context);
  }

  /** Adds the embedder's linear layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    for (Linear l : new Linear[] {timeLinear1, timeLinear2, timeProj, textLinear1, textLinear2}) {
      out.put(l.name(), l);
    }
  }
}
