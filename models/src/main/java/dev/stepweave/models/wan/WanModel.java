package dev.stepweave.models.wan;

import dev.stepweave.core.cache.EvictionPolicy;
import dev.stepweave.core.cache.FeatureCache;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.AdapterInfo;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.SwappedComponents;
import dev.stepweave.core.loop.WorkEstimate;
import dev.stepweave.core.memory.MemoryBudget;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.clip.ClipImageProcessor;
import dev.stepweave.models.clip.ClipVisionConfig;
import dev.stepweave.models.clip.ClipVisionEncoder;
import dev.stepweave.models.sampling.Sampler;
import dev.stepweave.models.text.PromptTokenizer;
import dev.stepweave.models.text.UMT5Config;
import dev.stepweave.models.text.UMT5Encoder;
import dev.stepweave.models.wan.lora.WanAdapters;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/**
 * A Wan 2.1 T2V checkpoint loaded onto one backend: its card, its components and its three loops.
 * It holds weights only; every request's state lives in the loops' states.
 */
public final class WanModel implements ModelInstance, AutoCloseable {
  /** The reference pipeline's default text length. */
  public static final int DEFAULT_MAX_SEQUENCE_LENGTH = 512;

  /** Bytes of text embeddings kept for reuse across requests (≈ 64 prompts of 512×4096 F32). */
  public static final long TEXT_EMBEDDING_BUDGET_BYTES = 512L << 20;

  /** Bytes of image embeddings kept for reuse across requests (≈ 48 images of 257×1280 F32). */
  public static final long IMAGE_EMBEDDING_BUDGET_BYTES = 64L << 20;

  /**
   * The components whose weights live on the backend in every Wan checkpoint, each in a pool of its
   * own there; {@link #weightComponents()} adds the image encoder and the second expert when the
   * checkpoint has them.
   */
  public static final List<String> WEIGHT_COMPONENTS =
      List.of("text_encoder", "transformer", "vae");

  private final String instanceId;
  private final Path dir;
  private final ModelCard card;
  private final Backend backend;
  private final PromptTokenizer tokenizer;
  private final UMT5Encoder textEncoder;
  private final Experts experts;
  private final java.util.concurrent.atomic.AtomicLong weightsVersion =
      new java.util.concurrent.atomic.AtomicLong();
  private final ExpertRouting routing;
  // Per-token timesteps (model_index.json expand_timesteps, the Wan2.2 TI2V layout).
  private final boolean perTokenTimesteps;
  private final List<String> weightComponents;
  private final WanVae vae;
  private final ClipImageProcessor imageProcessor; // null without an image encoder
  private final ClipVisionEncoder imageEncoder; // null without an image encoder
  private final SamplerChoice samplers;
  private final TextEncodeLoop textEncode;
  private final DenoiseLoop denoise;
  private final VaeDecodeLoop vaeDecode;
  private final Map<String, Loop<? extends LoopState>> loops;
  private final List<TensorSource> sources;
  private final WanRequestRules rules;
  // Shared by all requests on this instance and keyed by content, encoder, weights, adapters and
  // precision; it holds no request's state.
  private final FeatureCache<Tensor> textEmbeddings =
      new FeatureCache<>(TEXT_EMBEDDING_BUDGET_BYTES, EvictionPolicy.FIFO, Tensor::byteSize);
  // Keyed by the image's hash, the encoder, its weights and precision, like the text cache.
  private final FeatureCache<Tensor> imageEmbeddings =
      new FeatureCache<>(IMAGE_EMBEDDING_BUDGET_BYTES, EvictionPolicy.FIFO, Tensor::byteSize);
  private final WanAdapters adapters;

  private WanModel(
      String instanceId,
      Path dir,
      ModelCard card,
      Backend backend,
      PromptTokenizer tokenizer,
      UMT5Encoder textEncoder,
      Experts experts,
      ExpertRouting routing,
      boolean perTokenTimesteps,
      WanVae vae,
      ClipImageProcessor imageProcessor,
      ClipVisionEncoder imageEncoder,
      SamplerChoice samplers,
      List<TensorSource> sources) {
    this.instanceId = instanceId;
    this.sources = List.copyOf(sources);
    this.rules =
        new WanRequestRules(
            card,
            routing,
            samplers,
            WanRequestRules.tokenizerMaxLength(dir.resolve("tokenizer")),
            vae.config().spatialCompression(),
            experts.config(ExpertRouting.FIRST).patchSize());
    this.dir = dir;
    this.card = card;
    this.backend = backend;
    this.tokenizer = tokenizer;
    this.textEncoder = textEncoder;
    this.experts = experts;
    this.routing = routing;
    this.perTokenTimesteps = perTokenTimesteps;
    this.weightComponents = componentsWithWeights(!routing.single(), imageEncoder != null);
    this.vae = vae;
    this.imageProcessor = imageProcessor;
    this.imageEncoder = imageEncoder;
    this.samplers = samplers;
    this.textEncode = new TextEncodeLoop(this);
    this.denoise = new DenoiseLoop(this);
    this.vaeDecode = new VaeDecodeLoop(this);
    this.adapters =
        new WanAdapters(
            card.modelId(),
            backend,
            () -> experts.loaded(ExpertRouting.FIRST).adaptableLayers(),
            WanAdapters.DEFAULT_BUDGET_BYTES);
    Map<String, Loop<? extends LoopState>> all = new LinkedHashMap<>();
    all.put(WanCards.TEXT_ENCODE, textEncode);
    all.put(WanCards.IMAGE_ENCODE, new ImageEncodeLoop(this));
    all.put(WanCards.VAE_ENCODE, new VaeEncodeLoop(this));
    all.put(WanCards.DENOISE, denoise);
    all.put(WanCards.VAE_DECODE, vaeDecode);
    // The loops the card declares, no more: an I2V loop on a T2V card would read no image.
    all.keySet().retainAll(card.loops().keySet());
    this.loops = Map.copyOf(all);
  }

  /** {@link #load(Path, Backend, WanLoadOptions)} with {@link WanLoadOptions#DEFAULT}. */
  public static WanModel load(Path dir, Backend backend) {
    return load(dir, backend, WanLoadOptions.DEFAULT);
  }

  /**
   * Loads a diffusers-format Wan checkpoint: the card is read (or imported) and validated first,
   * then each component strictly (a missing, misshapen or unexpected tensor is a one-line {@link
   * CheckpointException} naming the file and tensor). Each of {@link #weightComponents} is loaded
   * into its own pool of the backend ({@link Backend#loadingComponent}), tagged with this
   * instance's id and the component's id ({@link #memoryTag}). The transformer experts load last,
   * once the other components show what is left of the device: {@code options} say whether a
   * two-expert checkpoint keeps both awake or one at a time ({@link #expertChoice}).
   */
  public static WanModel load(Path dir, Backend backend, WanLoadOptions options) {
    if (!Files.isDirectory(dir)) {
      throw new CheckpointException("model directory not found: " + dir);
    }
    DiffusersDirectory d = DiffusersDirectory.open(dir);
    ModelCard card = WanCards.cardFor(d);
    SamplerChoice samplers = WanRequestRules.samplers(d);
    String instanceId = "wan-" + UUID.randomUUID().toString().substring(0, 8);
    List<TensorSource> sources = new ArrayList<>();
    PromptTokenizer tokenizer = PromptTokenizer.load(d.component("tokenizer").dir());
    try {
      UMT5Encoder textEncoder =
          loadComponent(
              d,
              "text_encoder",
              instanceId,
              backend,
              sources,
              w -> UMT5Encoder.load(umt5Config(d), w));
      boolean hasImageEncoder = card.components().containsKey(WanCards.IMAGE_ENCODER);
      ClipImageProcessor imageProcessor =
          hasImageEncoder
              ? ClipImageProcessor.read(d.component(WanCards.IMAGE_PROCESSOR).configFile())
              : null;
      ClipVisionEncoder imageEncoder =
          hasImageEncoder
              ? loadComponent(
                  d,
                  WanCards.IMAGE_ENCODER,
                  instanceId,
                  backend,
                  sources,
                  w ->
                      ClipVisionEncoder.load(
                          ClipVisionConfig.read(d.component(WanCards.IMAGE_ENCODER).configFile()),
                          w))
              : null;
      WanVae vae =
          loadComponent(
              d,
              "vae",
              instanceId,
              backend,
              sources,
              w -> WanVae.load(WanVaeConfig.fromJson(d.component("vae").config()), w));
      ExpertRouting routing = routing(d, samplers);
      Map<String, WanTransformerConfig> configs = expertConfigs(d, routing);
      int textDim = configs.get(ExpertRouting.FIRST).textDim();
      if (textEncoder.config().dModel() != textDim) {
        throw new CheckpointException(
            d.component("transformer").configFile()
                + ": text_dim "
                + textDim
                + " does not match the text encoder's d_model "
                + textEncoder.config().dModel());
      }
      Experts experts = new Experts(routing, configs, backend, instanceId);
      WanModel model =
          new WanModel(
              instanceId,
              dir,
              card,
              backend,
              tokenizer,
              textEncoder,
              experts,
              routing,
              perTokenTimesteps(d),
              vae,
              imageProcessor,
              imageEncoder,
              samplers,
              sources);
      experts.load(
          model.chooseExperts(d, options),
          id ->
              loadComponent(
                  d,
                  id,
                  instanceId,
                  backend,
                  sources,
                  w -> WanTransformer.load(configs.get(id), w)));
      return model;
    } catch (RuntimeException e) {
      tokenizer.close();
      sources.forEach(TensorSource::close);
      componentsWithWeights(
              d.components().containsKey(ExpertRouting.SECOND),
              card.components().containsKey(WanCards.IMAGE_ENCODER))
          .forEach(c -> backend.releaseComponent(memoryTag(instanceId, c)));
      throw e;
    }
  }

  /**
   * How the experts will share the device: a one-expert checkpoint keeps its transformer; else
   * {@code options}' policy, which for {@link ExpertResidency#AUTO} weighs the device's budget with
   * the other components loaded against both experts' weights (their checkpoint tensors in the
   * dtype they compute in) and what the card's default request reserves.
   */
  private ExpertChoice chooseExperts(DiffusersDirectory d, WanLoadOptions options) {
    if (routing.single()) {
      return new ExpertChoice(ExpertResidency.RESIDENT, "one expert");
    }
    Optional<MemoryBudget> budget =
        backend
            .deviceMemory()
            .map(
                m ->
                    MemoryBudget.of(
                        m,
                        options
                            .memoryHeadroomBytes()
                            .orElseGet(() -> MemoryBudget.defaultHeadroom(m.totalBytes()))));
    long expertsBytes = 0;
    if (budget.isPresent()) {
      for (String id : routing.experts()) {
        expertsBytes += weightBytes(d, id, computeDType(id, backend));
      }
    }
    return options
        .experts()
        .choose(budget, expertsBytes, footprint(defaultRequest()).memoryBytes());
  }

  /** Bytes of component {@code id}'s checkpoint tensors in {@code dtype}, read from the headers. */
  private static long weightBytes(DiffusersDirectory d, String id, DType dtype) {
    try (TensorSource source = d.component(id).openWeights()) {
      long numel = 0;
      for (String key : source.keys()) {
        numel += Tensor.numel(source.info(key).shape());
      }
      return numel * dtype.byteSize();
    }
  }

  /** The request the card's defaults describe: what {@link ExpertResidency#AUTO} makes room for. */
  Request defaultRequest() {
    GenerationDefaults g = card.defaults();
    TaskType task =
        card.tasks().contains(TaskType.T2V) ? TaskType.T2V : card.tasks().iterator().next();
    return Request.builder(
            task,
            new DiffusionParams(
                g.steps(),
                g.guidance(),
                0,
                g.width(),
                g.height(),
                g.frames(),
                g.fps(),
                "",
                Optional.empty(),
                Optional.empty()))
        .build();
  }

  /**
   * {@link #WEIGHT_COMPONENTS}, with the image encoder after the text encoder and the second expert
   * after the first when there are.
   */
  private static List<String> componentsWithWeights(boolean twoExperts, boolean imageEncoder) {
    List<String> out = new ArrayList<>(WEIGHT_COMPONENTS);
    if (imageEncoder) {
      out.add(out.indexOf("text_encoder") + 1, WanCards.IMAGE_ENCODER);
    }
    if (twoExperts) {
      out.add(out.indexOf(ExpertRouting.FIRST) + 1, ExpertRouting.SECOND);
    }
    return List.copyOf(out);
  }

  /**
   * Two experts when {@code model_index.json} names {@code transformer_2} with a {@code
   * boundary_ratio} (the card import refuses either without the other), switched at the ratio times
   * the scheduler's {@code num_train_timesteps}; else one.
   */
  static ExpertRouting routing(DiffusersDirectory d, SamplerChoice samplers) {
    var ratio = d.attributes().get("boundary_ratio");
    if (!d.components().containsKey(ExpertRouting.SECOND) || ratio == null || ratio.isNull()) {
      return ExpertRouting.SINGLE;
    }
    return ExpertRouting.twoExperts(ratio.doubleValue(), samplers.trainTimesteps());
  }

  /** {@code expand_timesteps} of {@code model_index.json} (the card import checked its type). */
  private static boolean perTokenTimesteps(DiffusersDirectory d) {
    var value = d.attributes().get("expand_timesteps");
    return value != null && value.isBoolean() && value.booleanValue();
  }

  /**
   * Whether the transformer takes a timestep per token (Wan2.2 TI2V, {@code expand_timesteps}):
   * every token the sampler's, the first latent frame's 0 when an image gives that frame.
   */
  boolean perTokenTimesteps() {
    return perTokenTimesteps;
  }

  /** Each expert's config by component id, the second's checked against the first's. */
  private static Map<String, WanTransformerConfig> expertConfigs(
      DiffusersDirectory d, ExpertRouting routing) {
    WanTransformerConfig first =
        WanTransformerConfig.fromJson(d.component(ExpertRouting.FIRST).config());
    return routing.single()
        ? Map.of(ExpertRouting.FIRST, first)
        : Map.of(ExpertRouting.FIRST, first, ExpertRouting.SECOND, secondExpertConfig(d, first));
  }

  /** The second expert's config, which must describe the same shapes as the first's. */
  private static WanTransformerConfig secondExpertConfig(
      DiffusersDirectory d, WanTransformerConfig first) {
    var c = d.component(ExpertRouting.SECOND);
    WanTransformerConfig second = WanTransformerConfig.fromJson(c.config());
    if (second.inChannels() != first.inChannels()
        || second.outChannels() != first.outChannels()
        || second.textDim() != first.textDim()
        || !second.patchSize().equals(first.patchSize())) {
      throw new CheckpointException(
          c.configFile()
              + ": the second expert's in/out channels, text_dim and patch_size must match the"
              + " first's");
    }
    return second;
  }

  private static UMT5Config umt5Config(DiffusersDirectory d) {
    var c = d.component("text_encoder");
    return UMT5Config.fromJson(c.config(), c.configFile().toString());
  }

  /**
   * Loads one component into its pool on the backend. Its weight source stays open for the model's
   * life: the CPU backend uses F32 weights straight from the memory-mapped file instead of copying
   * them. On a backend whose activations are BF16 the text encoder's and the transformer's weights
   * are BF16 (tensor-core GEMMs) and the VAE's stay F32, as the reference Wan pipeline runs its VAE
   * in float32.
   */
  private static <T> T loadComponent(
      DiffusersDirectory d,
      String id,
      String instanceId,
      Backend backend,
      List<TensorSource> open,
      Function<Weights, T> loader) {
    TensorSource source = d.component(id).openWeights();
    open.add(source);
    DType weights = computeDType(id, backend);
    return backend.loadingComponent(
        memoryTag(instanceId, id), () -> loader.apply(new Weights(source, backend, weights)));
  }

  /**
   * The dtype a component's weights load in on {@code backend}: the backend's activation dtype,
   * except the VAE's, which stay float32 as the reference keeps them: its norm scales and biases
   * act on whole channels, and its activations stay F32 too (a residual VAE rounds only its
   * convolutions' operands to BF16 in the performance mode: {@link WanVae#precision}).
   */
  private static DType computeDType(String component, Backend backend) {
    return component.equals("vae") ? DType.F32 : backend.activationDType();
  }

  /**
   * The precision this instance runs: the transformer's (what dominates the output and the time);
   * {@link #precisionOf} gives each component's. Recipe checks, provenance, cache keys and graph
   * keys use these, not the checkpoint's storage dtype.
   */
  @Override
  public Precision precision() {
    return precisionOf("transformer");
  }

  /** The precision component {@code id} computes in on this instance's backend. */
  public Precision precisionOf(String id) {
    return id.equals("vae") ? vae.precision() : Precision.of(computeDType(id, backend));
  }

  /**
   * A tensor of a serialised loop state (a host copy) back on this model's backend, in the dtype it
   * was serialised with, so a resumed state is the state that was saved.
   */
  Tensor restored(Tensor serialised) {
    return backend.upload(serialised, serialised.dtype());
  }

  /** The tag of a component's pool on the backend: unique per loaded instance. */
  static String memoryTag(String instanceId, String component) {
    return instanceId + "/" + component;
  }

  private String memoryTag(String component) {
    if (!weightComponents.contains(component)) {
      throw new IllegalArgumentException(
          "model '"
              + card.modelId()
              + "' keeps no weights for '"
              + component
              + "' (components with weights: "
              + String.join(", ", weightComponents)
              + ")");
    }
    return memoryTag(instanceId, component);
  }

  /**
   * Releases {@code component}'s device memory, its weights parked in host memory (on a backend
   * that pools weights; on the CPU nothing happens). The component wakes by itself when it is next
   * used ({@link #textEncoder}, {@link #transformer}, {@link #vae}), so sleeping is never unsafe,
   * only slow: call it for a component that will not run for a while, from the thread that runs the
   * model's work (the engine's scheduler thread while an engine serves it). The admission budget is
   * made with every component awake ({@code MemoryBudget}; of experts taking turns, the largest),
   * so what sleeping frees is headroom, not room for more requests.
   *
   * @throws IllegalArgumentException when {@code component} is not one of {@link #weightComponents}
   */
  public void sleep(String component) {
    if (routing.experts().contains(component)) {
      experts.sleep(component);
    } else {
      backend.sleepComponent(memoryTag(component));
    }
  }

  /**
   * Restores a sleeping component's device memory and weights at the same addresses; of experts
   * kept one at a time, the other one sleeps first.
   */
  public void wake(String component) {
    if (routing.experts().contains(component)) {
      experts.wake(component);
    } else {
      backend.wakeComponent(memoryTag(component));
    }
  }

  /** How the experts share the device: both awake, or one at a time, and why. */
  public ExpertChoice expertChoice() {
    return experts.choice();
  }

  /** With experts kept one at a time, they take turns; else every component stays awake. */
  @Override
  public Optional<SwappedComponents> swappedComponents() {
    return experts.oneAtATime() ? Optional.of(experts) : Optional.empty();
  }

  /**
   * The device memory of each of this instance's components, by component id (empty on the CPU):
   * exact physical bytes held now, bytes in use, and whether it sleeps; in the order of the
   * components with weights, whatever order they were loaded in.
   */
  public Map<String, ComponentMemory> componentMemory() {
    Map<String, ComponentMemory> out = new LinkedHashMap<>();
    backend
        .deviceMemory()
        .ifPresent(
            m -> {
              for (String id : weightComponents) {
                for (ComponentMemory c : m.components()) {
                  if (c.component().equals(memoryTag(instanceId, id))) {
                    out.put(id, c);
                  }
                }
              }
            });
    return out;
  }

  public Path dir() {
    return dir;
  }

  public PromptTokenizer tokenizer() {
    return tokenizer;
  }

  /** The text encoder, woken first if it sleeps. */
  public UMT5Encoder textEncoder() {
    wake("text_encoder");
    return textEncoder;
  }

  /** The transformer (the first expert of a two-expert checkpoint), woken first if it sleeps. */
  public WanTransformer transformer() {
    return transformer(ExpertRouting.FIRST);
  }

  /**
   * Expert {@code id} ({@code transformer} or, with two experts, {@code transformer_2}), woken
   * first if it sleeps (of experts kept one at a time, the other one sleeps first).
   */
  public WanTransformer transformer(String id) {
    requireExpert(id);
    return experts.awake(id);
  }

  private void requireExpert(String id) {
    if (!routing.experts().contains(id)) {
      throw new IllegalArgumentException(
          "model '" + card.modelId() + "' has no expert '" + id + "' (" + routing.experts() + ")");
    }
  }

  /** The transformer experts' component ids, high noise first: one, or two (Wan2.2 A14B). */
  public List<String> expertIds() {
    return routing.experts();
  }

  /** Which expert runs each step. */
  ExpertRouting routing() {
    return routing;
  }

  /** The expert each of the request's steps runs, in order (all {@code transformer} with one). */
  public List<String> expertsPerStep(Request request) {
    var schedule = sampler(request).schedule(request.params().steps());
    List<String> out = new ArrayList<>();
    for (int i = 0; i < schedule.steps(); i++) {
      out.add(routing.expertAt(schedule.timestep(i)));
    }
    return List.copyOf(out);
  }

  /** The components with weights on the backend, each in its own pool. */
  public List<String> weightComponents() {
    return weightComponents;
  }

  /**
   * The image encoder, woken first if it sleeps.
   *
   * @throws IllegalStateException when the checkpoint has none
   */
  public ClipVisionEncoder imageEncoder() {
    requireImageEncoder();
    wake(WanCards.IMAGE_ENCODER);
    return imageEncoder;
  }

  /** The image encoder's processor. */
  public ClipImageProcessor imageProcessor() {
    requireImageEncoder();
    return imageProcessor;
  }

  /** The image encoder's configuration (reading it wakes nothing). */
  public ClipVisionConfig imageEncoderConfig() {
    requireImageEncoder();
    return imageEncoder.config();
  }

  private void requireImageEncoder() {
    if (imageEncoder == null) {
      throw new IllegalStateException("model '" + card.modelId() + "' has no image encoder");
    }
  }

  /** The image-embedding cache of this instance (empty without an image encoder). */
  public FeatureCache<Tensor> imageEmbeddingCache() {
    return imageEmbeddings;
  }

  /** The noise latents' shape for a request: {@code [1, z_dim, F', H', W']}. */
  int[] latentShape(Request request) {
    return denoise.latentShape(request);
  }

  /** The VAE, woken first if it sleeps. */
  public WanVae vae() {
    wake("vae");
    return vae;
  }

  /** The text encoder's configuration (reading it wakes nothing). */
  public UMT5Config textEncoderConfig() {
    return textEncoder.config();
  }

  /** The transformer's configuration (reading it wakes nothing). */
  public WanTransformerConfig transformerConfig() {
    return experts.config(ExpertRouting.FIRST);
  }

  /** The VAE's configuration (reading it wakes nothing). */
  public WanVaeConfig vaeConfig() {
    return vae.config();
  }

  /** This instance's adapters: file inspection and the device cache of loaded ones. */
  public WanAdapters adapters() {
    return adapters;
  }

  /**
   * Reads a LoRA file against this transformer (diffusers/PEFT or original Wan keys).
   *
   * @throws dev.stepweave.core.extend.InvalidAdapterException naming the key or tensor that does
   *     not fit
   */
  @Override
  public AdapterInfo inspectAdapter(Path file) {
    return adapters.inspect(file);
  }

  @Override
  public double shiftFor(Request request) {
    return samplers.shift(request.params().shift());
  }

  /** The text-embedding cache of this instance (its metrics count encoder runs saved). */
  public FeatureCache<Tensor> textEmbeddingCache() {
    return textEmbeddings;
  }

  /**
   * The text length prompts are padded to: the {@code text_encode} loop's {@code
   * max_sequence_length} override, else the tokenizer's {@code model_max_length}, else the
   * reference pipeline's 512.
   */
  public int maxSequenceLength(Request request) {
    return rules.maxSequenceLength(request);
  }

  @Override
  public void validate(Request request) {
    rules.validate(request);
  }

  /**
   * The request's worst case over its program: the text embeddings (held to the end), the
   * image-to-video condition and image embeddings (held to the end of denoising), the denoise
   * state, the denoised latents and the decode state all resident at once; the largest peak
   * activation of any step; and the FLOPs and bytes of every step ({@link #workEstimate}).
   */
  @Override
  public ResourceRequest footprint(Request request) {
    WorkEstimate estimate = workEstimate(request);
    int[] latents = denoise.latentShape(request);
    long resident = Tensor.numel(latents) * 4L; // the denoised latents handed to the decoder
    long peak = 0;
    double flops = 0;
    double bytes = 0;
    for (WorkEstimate.Phase p : estimate.phases()) {
      ResourceRequest step = p.perStep();
      // A phase's state is resident once however many steps it runs (text: once per branch).
      resident += step.residentBytes() * (p.loopId().equals(WanCards.TEXT_ENCODE) ? p.steps() : 1);
      peak = Math.max(peak, step.peakActivationBytes());
      flops += step.flops() * p.steps();
      bytes += step.bytesMoved() * p.steps();
    }
    return new ResourceRequest(0, resident, peak, 0, flops, bytes);
  }

  /**
   * The request's loops in program order: text encoding once per guidance branch, the image
   * encoders of image-to-video once, {@code steps} denoising steps (every branch in one call) and
   * one decode step per latent frame.
   */
  @Override
  public WorkEstimate workEstimate(Request request) {
    int branches = Guidance.needsUncond(request, routing) ? 2 : 1;
    int length = maxSequenceLength(request);
    int[] latents = denoise.latentShape(request);
    List<WorkEstimate.Phase> phases = new ArrayList<>();
    phases.add(
        new WorkEstimate.Phase(
            WanCards.TEXT_ENCODE, WorkKind.ENCODER_CHUNK, branches, textEncode.resources(length)));
    long conditionBytes = 0;
    int imageTokens = 0;
    if (loops.get(WanCards.IMAGE_ENCODE) instanceof ImageEncodeLoop image) {
      ResourceRequest encode = image.resources();
      phases.add(new WorkEstimate.Phase(WanCards.IMAGE_ENCODE, WorkKind.ENCODER_CHUNK, 1, encode));
      conditionBytes += encode.residentBytes();
      imageTokens =
          1 + imageEncoder.config().patchesPerSide() * imageEncoder.config().patchesPerSide();
    }
    if (loops.get(WanCards.VAE_ENCODE) instanceof VaeEncodeLoop condition) {
      phases.add(
          new WorkEstimate.Phase(
              WanCards.VAE_ENCODE, WorkKind.VAE_TILE, 1, condition.resources(request)));
      conditionBytes += VaeEncodeLoop.conditionBytes(this, request);
    }
    phases.add(
        new WorkEstimate.Phase(
            WanCards.DENOISE,
            WorkKind.DIFFUSION_STEP,
            request.params().steps(),
            denoise.resources(latents, length, branches, conditionBytes, imageTokens)));
    phases.add(
        new WorkEstimate.Phase(
            WanCards.VAE_DECODE, WorkKind.VAE_TILE, latents[2], vaeDecode.resources(latents)));
    return new WorkEstimate(phases);
  }

  /** The sampler a request runs with. */
  public Sampler sampler(Request request) {
    return samplers.choose(request.params().sampler(), request.params().shift());
  }

  @Override
  public String instanceId() {
    return instanceId;
  }

  @Override
  public ModelCard card() {
    return card;
  }

  @Override
  public Backend backend() {
    return backend;
  }

  @Override
  public String samplerFor(Request request) {
    return request.params().sampler().orElse(samplers.defaultName());
  }

  @Override
  public <T> T component(String id, Class<T> type) {
    Object c =
        switch (id) {
          case "tokenizer" -> tokenizer;
          case "text_encoder" -> textEncoder;
          case ExpertRouting.FIRST -> experts.loaded(ExpertRouting.FIRST);
          case "vae" -> vae;
          case "scheduler" -> samplers;
          case WanCards.IMAGE_ENCODER, WanCards.IMAGE_PROCESSOR -> {
            if (imageEncoder == null) {
              throw new IllegalArgumentException(
                  "model '" + card.modelId() + "' has no component '" + id + "'");
            }
            yield id.equals(WanCards.IMAGE_ENCODER) ? imageEncoder : imageProcessor;
          }
          case ExpertRouting.SECOND -> {
            if (routing.single()) {
              throw new IllegalArgumentException(
                  "model '" + card.modelId() + "' has no component '" + id + "'");
            }
            yield experts.loaded(id);
          }
          default ->
              throw new IllegalArgumentException(
                  "model '" + card.modelId() + "' has no component '" + id + "'");
        };
    if (!type.isInstance(c)) {
      throw new IllegalArgumentException(
          "component '"
              + id
              + "' is a "
              + c.getClass().getSimpleName()
              + ", not "
              + type.getSimpleName());
    }
    return type.cast(c);
  }

  @Override
  public Loop<? extends LoopState> loop(String loopId) {
    Loop<? extends LoopState> loop = loops.get(loopId);
    if (loop == null) {
      throw new IllegalArgumentException(
          "model '" + card.modelId() + "' has no loop '" + loopId + "'");
    }
    return loop;
  }

  @Override
  public long weightsVersion() {
    return weightsVersion.get();
  }

  /**
   * Replaces an expert ({@code transformer}, or {@code transformer_2} with two experts) by one
   * built from {@code values}, host tensors by checkpoint name, through the same strict loader as a
   * checkpoint: every tensor the expert has, of its shapes, and no other (a one-line {@link
   * dev.stepweave.tensor.io.CheckpointException} otherwise, the old weights untouched). Then bumps
   * the weights version, which every cache key and batch pool of this instance carries, so nothing
   * computed under the old weights is reused. The engine calls it with no step in flight ({@code
   * Engine.syncWeights}).
   */
  @Override
  public long swapWeights(String component, Map<String, Tensor> values) {
    if (!component.equals(ExpertRouting.FIRST) && !component.equals(ExpertRouting.SECOND)) {
      throw new IllegalArgumentException(
          "model '" + card.modelId() + "' swaps transformer weights only, not '" + component + "'");
    }
    requireExpert(component);
    WanTransformerConfig config = experts.config(component);
    var source =
        new dev.stepweave.tensor.io.InMemoryTensors(values, "weights synced into " + component);
    // The new weights go into the expert's pool, which must be awake for that.
    experts.awake(component);
    WanTransformer fresh =
        backend.loadingComponent(
            memoryTag(instanceId, component),
            () ->
                WanTransformer.load(
                    config, new Weights(source, backend, computeDType(component, backend))));
    experts.replace(component, fresh);
    return weightsVersion.incrementAndGet();
  }

  /** Closes the checkpoint files and frees the components' device memory on the backend. */
  @Override
  public void close() {
    tokenizer.close();
    sources.forEach(TensorSource::close);
    weightComponents.forEach(c -> backend.releaseComponent(memoryTag(instanceId, c)));
  }
}
