package dev.stepweave.models.wan;

import dev.stepweave.core.cache.CacheKey;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.Done;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopContext;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.core.loop.Step;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.clip.RgbImage;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * Image encoding (Wan2.1 I2V): one {@code ENCODER_CHUNK} step that runs the CLIP image processor
 * and vision encoder on the request's image and keeps {@code hidden_states[-2]}, what
 * WanImageToVideoPipeline's {@code encode_image} gives the transformer. The processor sees the
 * image as given (the reference encodes it before resizing it to the video's size). Embeddings come
 * from the instance's image-embedding cache when the same image was encoded before by the same
 * encoder weights in the same precision.
 */
final class ImageEncodeLoop implements Loop<ImageEncodeLoop.State> {
  static final String IMAGE_EMBEDS = "image_embeds";
  // Bump when what an embedding means changes (the processor's steps, the hidden state taken).
  private static final String EMBEDDING_CONTRACT = "clip-penultimate-1";

  private final WanModel model;

  ImageEncodeLoop(WanModel model) {
    this.model = model;
  }

  /**
   * @param image the request's input image
   * @param embeds its embeddings {@code [1, tokens, image_dim]} once encoded, else null
   */
  record State(ModalPart.Image image, Tensor embeds, CancelScope scope) implements LoopState {
    @Override
    public int stepsDone() {
      return embeds == null ? 0 : 1;
    }

    @Override
    public int totalSteps() {
      return 1;
    }
  }

  @Override
  public String id() {
    return WanCards.IMAGE_ENCODE;
  }

  @Override
  public State init(Request request, ModelInstance instance, LoopContext ctx) {
    return new State(request.image(), null, ctx.cancelScope());
  }

  @Override
  public Step next(State s) {
    if (s.embeds() != null) {
      return Done.INSTANCE;
    }
    var cfg = model.imageEncoderConfig();
    ModalPart.Image image = s.image();
    return new WorkPlan(
        id(),
        model.instanceId(),
        WorkKind.ENCODER_CHUNK,
        ShapeSignature.of("clip-vision", 1, cfg.imageSize(), cfg.imageSize()),
        resources(),
        s.scope(),
        0,
        () -> StepResult.of(embedding(image)));
  }

  /** The image's embeddings, from the cache or computed into it. */
  private Tensor embedding(ModalPart.Image image) {
    CacheKey key =
        CacheKey.builder(model.card().modelId(), WanCards.IMAGE_ENCODER)
            .loop(id())
            .weightsVersion(Long.toString(model.weightsVersion()))
            // Adapters target the transformer only: the encoder always runs its own weights.
            .adapters(Map.of())
            .precision(model.precisionOf(WanCards.IMAGE_ENCODER).wireName())
            .shape(image.width() + "x" + image.height())
            .inputs(Map.of("image", image.sourceSha256()))
            .contract(EMBEDDING_CONTRACT)
            .build();
    try (var lease =
        model
            .imageEmbeddingCache()
            .acquire(
                key,
                () ->
                    model
                        .imageEncoder()
                        .penultimateHiddenState(
                            model
                                .imageProcessor()
                                .preprocess(
                                    new RgbImage(image.width(), image.height(), image.rgb()))))) {
      return lease.value();
    }
  }

  /**
   * What one encode needs: its embeddings resident, a peak of eight activations of the encoder's
   * width, and the encoder's FLOPs and weight bytes (the cost model's seed).
   */
  ResourceRequest resources() {
    var cfg = model.imageEncoderConfig();
    long tokens = 1L + (long) cfg.patchesPerSide() * cfg.patchesPerSide();
    long d = cfg.hiddenSize();
    long outBytes = tokens * d * 4;
    double perLayer =
        2.0 * tokens * d * d * 4 // q, k, v, o
            + 2.0 * tokens * tokens * d * 2 // scores and values
            + 2.0 * tokens * d * cfg.intermediateSize() * 2; // feed-forward
    int layers = cfg.numHiddenLayers() - 1; // hidden_states[-2]: the last layer never runs
    double weightBytes = 4.0 * layers * (4.0 * d * d + 2.0 * d * cfg.intermediateSize());
    return new ResourceRequest(0, outBytes, outBytes * 8, 0, perLayer * layers, weightBytes);
  }

  @Override
  public State advance(State s, StepResult result) {
    return new State(s.image(), result.output(), s.scope());
  }

  @Override
  public LoopResult finalize(State s) {
    return new LoopResult(Map.of(IMAGE_EMBEDS, s.embeds()), List.of());
  }

  /** The state's tensors as they are, on the device: the runtime copies them when it must. */
  @Override
  public SerializedState serialize(State s) {
    var json = StateJson.object();
    json.put("done", s.stepsDone());
    return new SerializedState(
        id(), s.embeds() == null ? Map.of() : Map.of(IMAGE_EMBEDS, s.embeds()), json.toString());
  }

  /** The image is the request's: a resumed run re-reads it from the request. */
  @Override
  public State deserialize(
      SerializedState data, Request request, ModelInstance instance, LoopContext ctx) {
    boolean done = StateJson.parse(data.json(), id()).get("done").asInt() == 1;
    return new State(
        request.image(),
        done ? model.restored(data.tensors().get(IMAGE_EMBEDS)) : null,
        ctx.cancelScope());
  }
}
