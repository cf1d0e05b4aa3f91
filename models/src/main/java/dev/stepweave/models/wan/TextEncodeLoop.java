package dev.stepweave.models.wan;

import dev.stepweave.core.cache.CacheKey;
import dev.stepweave.core.cache.ContentHash;
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
import dev.stepweave.core.request.Request;
import dev.stepweave.models.text.TextEmbeddings;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Text encoding: one {@code ENCODER_CHUNK} step per prompt — the prompt, then the negative prompt
 * when guidance needs the unconditional branch — each tokenised, encoded by UMT5, cut to its real
 * length and zero-padded as WanPipeline does. Embeddings come from the instance's feature cache
 * when an equal key was computed before, so identical prompts run the encoder once.
 */
final class TextEncodeLoop implements Loop<TextEncodeLoop.State> {
  static final String PROMPT_EMBEDS = "prompt_embeds";
  static final String NEGATIVE_PROMPT_EMBEDS = "negative_prompt_embeds";
  private static final String TEXT_ENCODER = "text_encoder";
  // Bump when what an embedding means changes (cleaning, cut-and-zero-pad).
  private static final String EMBEDDING_CONTRACT = "umt5-cut-zero-padded-1";

  private final WanModel model;

  TextEncodeLoop(WanModel model) {
    this.model = model;
  }

  /**
   * @param prompts the texts to encode, in order (prompt, then negative prompt if needed)
   * @param embeddings the ones encoded so far
   */
  record State(List<String> prompts, List<Tensor> embeddings, int maxLength, CancelScope scope)
      implements LoopState {
    State {
      prompts = List.copyOf(prompts);
      embeddings = List.copyOf(embeddings);
    }

    @Override
    public int stepsDone() {
      return embeddings.size();
    }

    @Override
    public int totalSteps() {
      return prompts.size();
    }
  }

  @Override
  public String id() {
    return WanCards.TEXT_ENCODE;
  }

  @Override
  public State init(Request request, ModelInstance instance, LoopContext ctx) {
    List<String> prompts = new ArrayList<>(List.of(request.prompt()));
    if (Guidance.needsUncond(request, model.routing())) {
      prompts.add(request.params().negativePrompt());
    }
    return new State(prompts, List.of(), model.maxSequenceLength(request), ctx.cancelScope());
  }

  @Override
  public Step next(State s) {
    if (s.stepsDone() == s.totalSteps()) {
      return Done.INSTANCE;
    }
    String text = s.prompts().get(s.stepsDone());
    int length = s.maxLength();
    return new WorkPlan(
        id(),
        model.instanceId(),
        WorkKind.ENCODER_CHUNK,
        ShapeSignature.of("umt5", 1, length),
        resources(length),
        s.scope(),
        s.stepsDone(),
        () -> StepResult.of(embedding(text, length)));
  }

  /**
   * The prompt's embedding, from the cache or computed into it. The lease pins the entry while the
   * step runs; afterwards the loop state holds the tensor itself.
   */
  private Tensor embedding(String text, int length) {
    var tokens = TextEmbeddings.tokenize(model.tokenizer(), List.of(text), length);
    CacheKey key =
        CacheKey.builder(model.card().modelId(), TEXT_ENCODER)
            .loop(id())
            .weightsVersion(Long.toString(model.weightsVersion()))
            // Adapter files that touch the text encoder are refused when they register
            // (WanLoraFormat), so the encoder always runs its own weights: no adapter partition.
            .adapters(Map.of())
            .precision(model.precisionOf(TEXT_ENCODER).wireName())
            .shape("1x" + length)
            .inputs(
                Map.of(
                    "input_ids", ContentHash.ofLongs(tokens.inputIds().toLongArray()),
                    "attention_mask", ContentHash.ofLongs(tokens.attentionMask().toLongArray())))
            .contract(EMBEDDING_CONTRACT)
            .build();
    try (var lease =
        model
            .textEmbeddingCache()
            .acquire(key, () -> TextEmbeddings.embed(model.textEncoder(), tokens, length))) {
      return lease.value();
    }
  }

  /**
   * What encoding one prompt padded to {@code length} needs: its embeddings resident, a peak of
   * eight such activations, and the encoder's FLOPs and weight bytes (the cost model's seed).
   */
  ResourceRequest resources(int length) {
    var cfg = model.textEncoderConfig();
    long outBytes = (long) length * cfg.dModel() * 4;
    double inner = (double) cfg.numHeads() * cfg.dKv();
    double perLayer =
        2.0 * length * cfg.dModel() * inner * 4 // q, k, v, o
            + 2.0 * length * length * inner * 2 // scores and values
            + 2.0 * length * cfg.dModel() * cfg.dFf() * 3; // gated feed-forward
    double weightBytes =
        4.0 * cfg.numLayers() * (4.0 * cfg.dModel() * inner + 3.0 * cfg.dModel() * cfg.dFf());
    return new ResourceRequest(
        0, outBytes, outBytes * 8, 0, perLayer * cfg.numLayers(), weightBytes);
  }

  @Override
  public State advance(State s, StepResult result) {
    List<Tensor> done = new ArrayList<>(s.embeddings());
    done.add(result.output());
    return new State(s.prompts(), done, s.maxLength(), s.scope());
  }

  @Override
  public LoopResult finalize(State s) {
    Map<String, Tensor> out = new HashMap<>();
    out.put(PROMPT_EMBEDS, s.embeddings().get(0));
    if (s.embeddings().size() > 1) {
      out.put(NEGATIVE_PROMPT_EMBEDS, s.embeddings().get(1));
    }
    return new LoopResult(out, List.of());
  }

  /** The state's tensors as they are, on the device: the runtime copies them when it must. */
  @Override
  public SerializedState serialize(State s) {
    Map<String, Tensor> tensors = new HashMap<>();
    for (int i = 0; i < s.embeddings().size(); i++) {
      tensors.put("embeddings." + i, s.embeddings().get(i));
    }
    var json = StateJson.object();
    var prompts = json.putArray("prompts");
    s.prompts().forEach(prompts::add);
    json.put("done", s.embeddings().size());
    return new SerializedState(id(), tensors, json.toString());
  }

  @Override
  public State deserialize(
      SerializedState data, Request request, ModelInstance instance, LoopContext ctx) {
    var json = StateJson.parse(data.json(), id());
    List<String> prompts = new ArrayList<>();
    json.get("prompts").forEach(p -> prompts.add(p.asText()));
    List<Tensor> embeddings = new ArrayList<>();
    for (int i = 0; i < json.get("done").asInt(); i++) {
      embeddings.add(model.restored(data.tensors().get("embeddings." + i)));
    }
    return new State(prompts, embeddings, model.maxSequenceLength(request), ctx.cancelScope());
  }
}
