package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;

/**
 * Turns the timestep, the text-encoder states and (for image-to-video) the image-encoder states
 * into what every block consumes: the time embedding, its 6-way modulation projection, the text
 * context and the image context in the model's width. One timestep per sample gives one embedding
 * per sample; a timestep per token (Wan2.2 TI2V) gives one per token.
 */
final class ConditionEmbedder {
  private final TimestepSinusoid sinusoid;
  private final Linear timeLinear1;
  private final Linear timeLinear2;
  private final Linear timeProj;
  private final Linear textLinear1;
  private final Linear textLinear2;
  private final WanImageEmbedder image; // null without image conditioning

  /**
   * The conditioning tensors.
   *
   * @param temb {@code [B, dim]}, or {@code [B, L, dim]} for per-token timesteps
   * @param timestepProj {@code [B, 6·dim]}, or {@code [B, L, 6·dim]}
   * @param context {@code [B, S, dim]}
   * @param imageContext {@code [B, S_img, dim]}, or null without image states
   */
  record Conditions(Tensor temb, Tensor timestepProj, Tensor context, Tensor imageContext) {}

  private ConditionEmbedder(
      TimestepSinusoid sinusoid,
      Linear timeLinear1,
      Linear timeLinear2,
      Linear timeProj,
      Linear textLinear1,
      Linear textLinear2,
      WanImageEmbedder image) {
    this.sinusoid = sinusoid;
    this.timeLinear1 = timeLinear1;
    this.timeLinear2 = timeLinear2;
    this.timeProj = timeProj;
    this.textLinear1 = textLinear1;
    this.textLinear2 = textLinear2;
    this.image = image;
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
        Linear.take(text, "linear_2", dim, dim),
        cfg.image() == null
            ? null
            : WanImageEmbedder.load(cfg, cfg.image(), weights.scope("image_embedder")));
  }

  /**
   * @param timesteps {@code [B]} or {@code [B, L]}
   * @param imageStates the image-encoder states, or null (then there is no image context)
   */
  Conditions apply(
      Backend backend,
      Tensor timesteps,
      Tensor textStates,
      Tensor imageStates,
      AdapterRows adapters) {
    Tensor features = sinusoid.apply(backend, timesteps);
    // One timestep per request: each request's row is an item of its own ([B, 1, freq]), so its
    // embedding is the same bits however many requests share the call (Backend.linear).
    boolean perRequest = features.rank() == 2;
    Tensor items = perRequest ? features.unsqueeze(1) : features;
    Tensor embedded =
        timeLinear2.apply(
            backend, backend.silu(timeLinear1.apply(backend, items, adapters)), adapters);
    Tensor projected = timeProj.apply(backend, backend.silu(embedded), adapters);
    Tensor temb = perRequest ? embedded.squeeze(1) : embedded;
    Tensor timestepProj = perRequest ? projected.squeeze(1) : projected;
    Tensor context =
        textLinear2.apply(
            backend,
            backend.gelu(textLinear1.apply(backend, textStates, adapters), true),
            adapters);
    Tensor imageContext =
        imageStates == null ? null : image.apply(backend, imageStates, textStates.dim(0), adapters);
    return new Conditions(temb, timestepProj, context, imageContext);
  }

  /** Adds the embedder's linear layers to {@code out}, by name. */
  void collectLayers(java.util.Map<String, Linear> out) {
    for (Linear l : new Linear[] {timeLinear1, timeLinear2, timeProj, textLinear1, textLinear2}) {
      out.put(l.name(), l);
    }
    if (image != null) {
      image.collectLayers(out);
    }
  }
}
