package dev.stepweave.models.wan;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.PluginState;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.extend.StepInfo;
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
import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.models.sampling.Sampler;
import dev.stepweave.models.sampling.SamplerState;
import dev.stepweave.models.wan.cache.DenoiseHooks;
import dev.stepweave.models.wan.lora.WanAdapters;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Denoising: one {@code DIFFUSION_STEP} per sampler step. A step runs the transformer on the
 * branches the guidance policy needs (batched or not — the policy's dispatch choice), combines
 * them, and the sampler folds the prediction into the latents. A step the request's step cache
 * reuses runs no transformer: its plan returns the cached prediction. The starting noise comes from
 * the request's own seed through a torch-compatible generator, never from batch position.
 */
final class DenoiseLoop implements Loop<DenoiseLoop.State> {
  static final String LATENTS = "latents";
  static final String BEHAVIOR = "behavior";
  private static final String PLUGIN = "plugin.";
  private static final String PLUGINS = "plugins";

  /**
   * The most tensors a sampler keeps besides the latents: UniPC's history at its highest solver
   * order (3) plus its last sample.
   */
  static final int MAX_SAMPLER_TENSORS = 4;

  private final WanModel model;

  DenoiseLoop(WanModel model) {
    this.model = model;
  }

  /**
   * @param latents current latents {@code [1, C, F, H, W]} on the model's backend
   * @param sampler the sampler's per-request state (step index, multistep history)
   * @param cond conditional text embeddings
   * @param uncond unconditional text embeddings, or null without guidance
   * @param condition the image-to-video condition {@code [1, 4 + z_dim, F, H, W]} concatenated to
   *     the latents at every step, or null for text-to-video
   * @param firstFrame the encoded image as the first latent frame {@code [1, z_dim, 1, H, W]} of a
   *     TI2V request with an image (re-imposed on the latents before every forward and after the
   *     last step, its tokens at timestep 0), or null
   * @param imageEmbeds the image-encoder states the transformer attends to {@code [1, tokens,
   *     image_dim]}, or null without an image encoder
   * @param request the request (the guidance policy and sampler are pure functions of it)
   * @param plugins the request's interceptor state, per plugin and CFG branch (serialised)
   * @param hooks the extension hooks assembled for this request (configuration, not state)
   * @param adapters the request's adapters at their strengths, held resident while the run lasts
   *     (configuration resolved at acceptance, not serialised state)
   * @param behavior what the request captures of the loop's behaviour so far (serialised)
   */
  record State(
      Tensor latents,
      SamplerState sampler,
      Tensor cond,
      Tensor uncond,
      Tensor condition,
      Tensor firstFrame,
      Tensor imageEmbeds,
      Request request,
      CancelScope scope,
      PluginState plugins,
      DenoiseHooks hooks,
      List<AdapterRows.Applied> adapters,
      BehaviorTrace behavior)
      implements LoopState {
    @Override
    public int stepsDone() {
      return sampler.stepIndex();
    }

    @Override
    public int totalSteps() {
      return sampler.schedule().steps();
    }
  }

  @Override
  public String id() {
    return WanCards.DENOISE;
  }

  @Override
  public State init(Request request, ModelInstance instance, LoopContext ctx) {
    LoopResult text = ctx.upstream(WanCards.TEXT_ENCODE);
    Backend ops = model.backend();
    Tensor cond = text.tensor(TextEncodeLoop.PROMPT_EMBEDS);
    Tensor uncond =
        Guidance.needsUncond(request, model.routing())
            ? text.tensor(TextEncodeLoop.NEGATIVE_PROMPT_EMBEDS)
            : null;
    Tensor latents = ops.upload(startingLatents(request), DType.F32);
    Sampler sampler = model.sampler(request);
    var loops = model.card().loops();
    boolean encodes = loops.containsKey(WanCards.VAE_ENCODE);
    boolean perToken = model.perTokenTimesteps();
    Tensor condition =
        encodes && !perToken
            ? ctx.upstream(WanCards.VAE_ENCODE).tensor(VaeEncodeLoop.CONDITION)
            : null;
    // A TI2V request without an image hands on no first frame: text-to-video.
    Tensor firstFrame =
        encodes && perToken
            ? ctx.upstream(WanCards.VAE_ENCODE).tensors().get(VaeEncodeLoop.FIRST_FRAME)
            : null;
    Tensor imageEmbeds =
        loops.containsKey(WanCards.IMAGE_ENCODE)
            ? ctx.upstream(WanCards.IMAGE_ENCODE).tensor(ImageEncodeLoop.IMAGE_EMBEDS)
            : null;
    return new State(
        latents,
        sampler.start(request.params().steps(), request.params().seed()),
        cond,
        uncond,
        condition,
        firstFrame,
        imageEmbeds,
        request,
        ctx.cancelScope(),
        new PluginState(),
        hooks(request, ctx),
        adapters(ctx),
        BehaviorTrace.start(request.output().behavior(), ops, latents));
  }

  /**
   * The request's adapters on the backend, each held until the run lets go of its device state
   * (loaded here, outside any forward, so no recording ever allocates them).
   */
  private List<AdapterRows.Applied> adapters(LoopContext ctx) {
    List<AdapterRows.Applied> out = new java.util.ArrayList<>();
    for (ResolvedAdapter r : ctx.adapters()) {
      WanAdapters.Held held = model.adapters().acquire(r);
      ctx.hold(held);
      out.add(new AdapterRows.Applied(held.adapter(), (float) r.scale()));
    }
    return List.copyOf(out);
  }

  private DenoiseHooks hooks(Request request, LoopContext ctx) {
    return DenoiseHooks.assemble(ctx.extensions().admit(request, model.card()), ctx.extensions());
  }

  /** The request's latents input if any, else {@code torch.randn} of the request's seed. */
  private Tensor startingLatents(Request request) {
    int[] shape = latentShape(request);
    for (ModalPart p : request.inputs()) {
      if (p instanceof ModalPart.Latents(Tensor given)) {
        if (!Arrays.equals(given.shape(), shape)) {
          throw new InvalidRequestException(
              "latents input has shape "
                  + Arrays.toString(given.shape())
                  + ", the request's size needs "
                  + Arrays.toString(shape));
        }
        return given.toF32();
      }
    }
    return TorchGenerator.seeded(request.params().seed()).randn(shape);
  }

  /** {@code [1, z_dim, (F−1)/4+1, H/8, W/8]} for the VAE's compression factors. */
  int[] latentShape(Request request) {
    var vae = model.vaeConfig();
    var p = request.params();
    return new int[] {
      1,
      vae.zDim(),
      (p.frames() - 1) / vae.temporalCompression() + 1,
      p.height() / vae.spatialCompression(),
      p.width() / vae.spatialCompression()
    };
  }

  @Override
  public Step next(State s) {
    if (s.sampler().isFinished()) {
      return Done.INSTANCE;
    }
    ExpertRouting routing = model.routing();
    int expert = routing.indexAt(s.sampler().timestep());
    CfgPolicy policy = Guidance.policyFor(s.request(), expert);
    int branches = policy.needsUncond() ? 2 : 1;
    int[] shape = s.latents().shape();
    int textLen = s.cond().dim(1);
    int channels = s.condition() == null ? shape[1] : shape[1] + s.condition().dim(1);
    int imageTokens = s.imageEmbeds() == null ? 0 : s.imageEmbeds().dim(1);
    ShapeSignature signature =
        ShapeSignature.of(
            "wan-dit", channels, shape[2], shape[3], shape[4], textLen, imageTokens, branches);
    // The first step of a new expert computes: a step cache must not carry the other expert's
    // prediction across the switch (block caches are keyed by expert in DitCall).
    boolean switched =
        s.stepsDone() > 0
            && routing.indexAt(s.sampler().schedule().timestep(s.stepsDone() - 1)) != expert;
    var reused =
        switched
            ? java.util.Optional.<dev.stepweave.core.loop.WorkCall>empty()
            : s.hooks().reusedStep(model.backend(), s.plugins(), s.latents(), s.stepsDone());
    if (reused.isPresent()) {
      // No transformer: its own signature, so it never groups with a batched forward.
      return new WorkPlan(
          id(),
          model.instanceId(),
          WorkKind.DIFFUSION_STEP,
          ShapeSignature.of("wan-reused-step", shape[1], shape[2], shape[3], shape[4]),
          new ResourceRequest(0, 0, Tensor.numel(shape) * 4L, 0),
          s.scope(),
          s.stepsDone(),
          reused.get());
    }
    StepInfo info =
        new StepInfo(s.request().id(), id(), s.stepsDone(), WorkKind.DIFFUSION_STEP, signature);
    return new WorkPlan(
        id(),
        model.instanceId(),
        WorkKind.DIFFUSION_STEP,
        signature,
        resources(shape, textLen, branches, s.condition(), s.imageEmbeds()),
        s.scope(),
        s.stepsDone(),
        new DitCall(
            model,
            s.latents(),
            s.sampler().timestep(),
            s.cond(),
            s.uncond(),
            s.condition(),
            s.firstFrame(),
            s.imageEmbeds(),
            policy,
            s.stepsDone(),
            s.plugins(),
            s.hooks(),
            s.hooks().taps(info, model.backend()),
            routing.experts().get(expert),
            // Adapters apply to the first expert, as the reference pipeline loads them by default.
            expert == 0 ? s.adapters() : List.of()));
  }

  /**
   * What one step of latents {@code shape} with text length {@code textLen} needs: resident
   * latents, sampler tensors (at their worst, {@link #MAX_SAMPLER_TENSORS}), text embeddings and
   * the image-to-video condition and image embeddings (null when absent); the transformer's peak
   * activation; and its FLOPs and weight bytes (the cost model's seed).
   */
  ResourceRequest resources(
      int[] shape, int textLen, int branches, Tensor condition, Tensor imageEmbeds) {
    long conditionBytes = condition == null ? 0 : condition.numel() * 4L;
    long imageBytes = imageEmbeds == null ? 0 : imageEmbeds.numel() * 4L;
    int imageTokens = imageEmbeds == null ? 0 : imageEmbeds.dim(1);
    return resources(shape, textLen, branches, conditionBytes + imageBytes, imageTokens);
  }

  /**
   * {@link #resources(int[], int, int, Tensor, Tensor)} by sizes: {@code conditionBytes} of
   * condition and image embeddings resident, {@code imageTokens} cross-attended besides the text.
   */
  ResourceRequest resources(
      int[] shape, int textLen, int branches, long conditionBytes, int imageTokens) {
    var cfg = model.transformerConfig();
    long d = cfg.innerDim();
    long tokens = (long) shape[2] * shape[3] * shape[4] / cfg.patchSize().volume();
    long latentBytes = Tensor.numel(shape) * 4L;
    long textBytes = (long) textLen * cfg.textDim() * 4;
    long resident = latentBytes * (1 + MAX_SAMPLER_TENSORS) + textBytes * branches + conditionBytes;
    long peak = tokens * d * 4L * 8 * branches + tokens * cfg.ffnDim() * 4L * branches;
    double perLayer =
        2.0 * tokens * d * d * 6 // self-attention q, k, v, o and cross-attention q, o
            + 2.0 * textLen * d * d * 2 // cross-attention k, v over the text
            + 2.0 * tokens * tokens * d * 2 // self-attention scores and values
            + 2.0 * tokens * textLen * d * 2 // cross-attention scores and values
            + 2.0 * imageTokens * d * d * 2 // image k, v
            + 2.0 * tokens * imageTokens * d * 2 // image attention scores and values
            + 2.0 * tokens * d * cfg.ffnDim() * 2; // feed-forward
    double weightBytes = 4.0 * cfg.numLayers() * (8.0 * d * d + 2.0 * d * cfg.ffnDim());
    return new ResourceRequest(
        0, resident, peak, 0, perLayer * cfg.numLayers() * branches, weightBytes);
  }

  /**
   * Folds a step in: the sampler turns the prediction into the next latents, the call's new plugin
   * state replaces the old, and the hooks measure what the next step's planning decides on. The
   * state's latents are the sampler's own, as the reference's after each step (a TI2V request's
   * first frame is imposed on the forward's input and on what {@link #finalize} hands on).
   */
  @Override
  public State advance(State s, StepResult result) {
    Backend ops = model.backend();
    Sampler sampler = model.sampler(s.request());
    var step = sampler.step(ops, s.sampler(), result.output(), s.latents());
    PluginState plugins = result.update(PluginState.class);
    if (!step.state().isFinished()) {
      plugins = s.hooks().afterStep(ops, plugins, step.sample(), step.state().stepIndex());
    }
    return new State(
        step.sample(),
        step.state(),
        s.cond(),
        s.uncond(),
        s.condition(),
        s.firstFrame(),
        s.imageEmbeds(),
        s.request(),
        s.scope(),
        plugins,
        s.hooks(),
        s.adapters(),
        s.behavior().after(ops, step));
  }

  /**
   * {@code latents [1, C, F, H, W]} with its first latent frame replaced by {@code firstFrame [1,
   * C, 1, H, W]}: the reference's {@code (1 − mask)·condition + mask·latents}, whose mask is 0 on
   * the first frame and 1 after, exactly (for finite values).
   */
  static Tensor withFirstFrame(Backend ops, Tensor latents, Tensor firstFrame) {
    int frames = latents.dim(2);
    if (frames == 1) {
      return firstFrame;
    }
    return ops.concat(List.of(firstFrame, ops.contiguous(latents.slice(2, 1, frames))), 2);
  }

  @Override
  public List<RequestEvent> eventsAfter(State s) {
    int every = s.request().output().previews();
    if (every == 0 || s.stepsDone() % every != 0) {
      return List.of();
    }
    return List.of(
        new RequestEvent.MediaPreview(
            s.request().id(),
            s.stepsDone(),
            LatentPreview.lastFrame(model.backend().download(s.latents()))));
  }

  /** A failed request keeps its latents as they were after its last good step. */
  @Override
  public List<Artifact> partialArtifacts(State s) {
    return List.of(
        new Artifact.LatentArtifact(
            "partial_" + LATENTS,
            model.backend().download(s.latents()).squeeze(0),
            WanProvenance.of(model, s.request(), id())));
  }

  /**
   * The denoised latents, with a TI2V request's first frame imposed after the last step (the
   * reference's {@code (1 − mask)·condition + mask·latents} before decoding).
   */
  @Override
  public LoopResult finalize(State s) {
    Tensor latents =
        s.firstFrame() == null
            ? s.latents()
            : withFirstFrame(model.backend(), s.latents(), s.firstFrame());
    List<Artifact> artifacts = new java.util.ArrayList<>();
    if (s.request().output().latents()) {
      artifacts.add(
          new Artifact.LatentArtifact(
              LATENTS,
              model.backend().download(latents).squeeze(0),
              WanProvenance.of(model, s.request(), id())));
    }
    if (s.behavior().capturing()) {
      artifacts.add(
          new Artifact.BehaviorArtifact(BEHAVIOR, behaviorRecord(s, latents), provenance(s)));
    }
    return new LoopResult(Map.of(LATENTS, latents), artifacts, s.plugins().report());
  }

  private dev.stepweave.core.request.Provenance provenance(State s) {
    return WanProvenance.of(model, s.request(), id());
  }

  /** The finished loop's behaviour, with what its numbers assumed besides the weights. */
  private dev.stepweave.core.request.BehaviorRecord behaviorRecord(State s, Tensor finalLatents) {
    Map<String, Tensor> conditioning = new HashMap<>();
    conditioning.put(dev.stepweave.core.request.BehaviorRecord.PROMPT_EMBEDS, s.cond());
    if (s.uncond() != null) {
      conditioning.put(
          dev.stepweave.core.request.BehaviorRecord.NEGATIVE_PROMPT_EMBEDS, s.uncond());
    }
    Map<String, String> assumptions = new java.util.LinkedHashMap<>();
    assumptions.put("block_cache", s.hooks().blockLayout());
    assumptions.put("step_cache", s.hooks().skipsSteps() ? "on" : "off");
    assumptions.put("backend", model.backend().name());
    assumptions.put("activation_dtype", model.backend().activationDType().name());
    if (model.sampler(s.request()) instanceof dev.stepweave.models.sampling.FlowSde sde) {
      assumptions.put("noise_level", Double.toString(sde.noiseLevel()));
    }
    return s.behavior()
        .record(
            id(),
            model.weightsVersion(),
            s.sampler(),
            model.backend(),
            finalLatents,
            conditioning,
            assumptions);
  }

  /** The state's tensors as they are, on the device: the runtime copies them when it must. */
  @Override
  public SerializedState serialize(State s) {
    Map<String, Tensor> tensors = new HashMap<>();
    tensors.put(LATENTS, s.latents());
    tensors.put("cond", s.cond());
    if (s.uncond() != null) {
      tensors.put("uncond", s.uncond());
    }
    if (s.condition() != null) {
      tensors.put(VaeEncodeLoop.CONDITION, s.condition());
    }
    if (s.firstFrame() != null) {
      tensors.put(VaeEncodeLoop.FIRST_FRAME, s.firstFrame());
    }
    if (s.imageEmbeds() != null) {
      tensors.put(ImageEncodeLoop.IMAGE_EMBEDS, s.imageEmbeds());
    }
    s.sampler().tensors().forEach((k, v) -> tensors.put("sampler." + k, v));
    s.plugins().tensors(t -> t).forEach((k, v) -> tensors.put(PLUGIN + k, v));
    tensors.putAll(s.behavior().tensors());
    var json = StateJson.object();
    s.sampler().scalars().forEach(json::put);
    s.behavior().writeTo(json);
    var plugins = json.putObject(PLUGINS);
    s.plugins().numbers().forEach(plugins::put);
    return new SerializedState(id(), tensors, json.toString());
  }

  @Override
  public State deserialize(
      SerializedState data, Request request, ModelInstance instance, LoopContext ctx) {
    Map<String, Tensor> samplerTensors = new HashMap<>();
    Map<String, Tensor> pluginTensors = new HashMap<>();
    data.tensors()
        .forEach(
            (k, v) -> {
              if (k.startsWith("sampler.")) {
                samplerTensors.put(k.substring("sampler.".length()), v);
              } else if (k.startsWith(PLUGIN)) {
                pluginTensors.put(k.substring(PLUGIN.length()), v);
              }
            });
    Map<String, String> scalars = new HashMap<>();
    Map<String, Double> pluginNumbers = new HashMap<>();
    var json = StateJson.parse(data.json(), id());
    json.properties()
        .forEach(
            e -> {
              if (e.getKey().equals(PLUGINS)) {
                e.getValue()
                    .properties()
                    .forEach(p -> pluginNumbers.put(p.getKey(), p.getValue().doubleValue()));
              } else {
                scalars.put(e.getKey(), e.getValue().asText());
              }
            });
    return new State(
        model.restored(data.tensors().get(LATENTS)),
        SamplerState.restore(samplerTensors, scalars, model::restored),
        model.restored(data.tensors().get("cond")),
        restoredOrNull(data, "uncond"),
        restoredOrNull(data, VaeEncodeLoop.CONDITION),
        restoredOrNull(data, VaeEncodeLoop.FIRST_FRAME),
        restoredOrNull(data, ImageEncodeLoop.IMAGE_EMBEDS),
        request,
        ctx.cancelScope(),
        PluginState.restore(pluginTensors, pluginNumbers, model::restored),
        hooks(request, ctx),
        adapters(ctx),
        BehaviorTrace.restore(data.tensors(), json));
  }

  private Tensor restoredOrNull(SerializedState data, String key) {
    Tensor t = data.tensors().get(key);
    return t == null ? null : model.restored(t);
  }
}
