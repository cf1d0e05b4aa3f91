package dev.stepweave.server;

import dev.stepweave.core.card.CacheContract;
import dev.stepweave.core.card.CheckpointManifest;
import dev.stepweave.core.card.ComponentKind;
import dev.stepweave.core.card.ComponentSpec;
import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.LoopSpec;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.ParallelismContract;
import dev.stepweave.core.card.ParitySpec;
import dev.stepweave.core.card.PrecisionContract;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.ActivePlugin;
import dev.stepweave.core.extend.AdapterInfo;
import dev.stepweave.core.extend.InvalidAdapterException;
import dev.stepweave.core.extend.ParamSchema;
import dev.stepweave.core.extend.Plugin;
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
import dev.stepweave.core.loop.WorkEstimate;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.AppliedAdapter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Provenance;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * A weightless model for server tests: "denoise" mixes a value seeded by the request's seed once
 * per step, "decode" paints small frames from it (a video, or an image for t2i). Outputs depend
 * only on the request, as a real model's do. Prompts containing "slow" sleep {@link #SLOW_STEP_MS}
 * per denoise step, so tests can catch a job in flight. Its card allows one cache plugin, {@link
 * #CACHE}: from {@code warmup_steps} on, a step reuses the value instead of mixing when the one
 * before it computed and {@code threshold} is above 0, counted in the loop's report.
 *
 * <p>It takes adapters too: a file of {@code MODULE.lora_A.weight} / {@code MODULE.lora_B.weight}
 * tensors registers (rank: the rows of its A factors; targets: the modules), any other key is
 * refused naming it. Each adapter a request runs with adds {@link #ADAPTER_STEP} × its scale to
 * every denoise step's value, so its strength reaches the output, and the artifact's provenance
 * lists it.
 *
 * <p>Variants serve other tasks ({@link #serving}): an image-to-video one takes the request's input
 * image, whose mean brightness moves the starting value (so the image reaches the output), and
 * records the hash of every image its denoise loop starts from ({@link #receivedImages}).
 *
 * <p>A prompt with "paced" takes {@link #PACED_STEP_MS} per denoise step (a job a browser can watch
 * and cancel), and a request asking for previews gets a {@code media.preview} of a 4×4 image the
 * colour of its value every N denoise steps, as the Wan denoise loop sends its latent projection.
 */
final class PatternModel implements ModelInstance {
  static final String ID = "pattern-test";
  static final long SLOW_STEP_MS = 10;
  static final long PACED_STEP_MS = 150;
  static final float ADAPTER_STEP = 0.01f;
  private static final String LORA_A = ".lora_A.weight";
  private static final String LORA_B = ".lora_B.weight";

  /** The cache plugin the card allows (deployments enable it or not). */
  static final Plugin CACHE =
      new Plugin() {
        @Override
        public String id() {
          return "patterncache";
        }

        @Override
        public InterceptionPoint point() {
          return InterceptionPoint.STEP;
        }

        @Override
        public boolean distributionAltering() {
          return true;
        }

        @Override
        public boolean reusesAcrossSteps() {
          return true;
        }

        @Override
        public ParamSchema schema() {
          return ParamSchema.of(
              ParamSchema.Param.number("threshold", 0, 1, 0.5, "reuse above 0"),
              ParamSchema.Param.integer("warmup_steps", 0, 100, 1, "first steps computed"));
        }
      };

  private final ModelCard card;
  private final java.util.Queue<String> receivedImages =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** The text-to-video card (t2v, t2i). */
  PatternModel() {
    this(ID, Set.of(TaskType.T2V, TaskType.T2I));
  }

  private PatternModel(String id, Set<TaskType> tasks) {
    card = patternCard(id, tasks);
  }

  /** A variant whose card, {@code id}, serves exactly {@code tasks}. */
  static PatternModel serving(String id, TaskType... tasks) {
    return new PatternModel(id, Set.of(tasks));
  }

  /** The sha256 of each input image a denoise loop started from, in order. */
  List<String> receivedImages() {
    return List.copyOf(receivedImages);
  }

  /**
   * @param threshold the request's cache threshold, 0 without the cache
   * @param reused steps that reused the value; {@code lastReused} whether the latest one did
   */
  record State(
      Request request,
      float value,
      int done,
      int total,
      CancelScope scope,
      double threshold,
      int warmup,
      int reused,
      boolean lastReused,
      List<AppliedAdapter> adapters)
      implements LoopState {
    @Override
    public int stepsDone() {
      return done;
    }

    @Override
    public int totalSteps() {
      return total;
    }
  }

  private final class PatternLoop implements Loop<State> {
    private final String id;
    private final WorkKind kind;

    PatternLoop(String id, WorkKind kind) {
      this.id = id;
      this.kind = kind;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public State init(Request r, ModelInstance m, LoopContext ctx) {
      LoopResult denoised = ctx.upstream().get("denoise");
      float start =
          denoised == null
              ? (r.params().seed() % 997) / 997f
              : denoised.tensor("value").getFloat(0);
      if (denoised == null && !r.images().isEmpty()) {
        ModalPart.Image image = r.image();
        receivedImages.add(image.sourceSha256());
        long sum = 0;
        for (byte b : image.rgb()) {
          sum += b & 0xff;
        }
        start = (start + sum / (float) image.rgb().length / 255f * 0.5f) % 1f;
      }
      int total = kind == WorkKind.DIFFUSION_STEP ? r.params().steps() : 1;
      double threshold = 0;
      int warmup = 0;
      if (kind == WorkKind.DIFFUSION_STEP) {
        for (ActivePlugin a : ctx.extensions().admit(r, card)) {
          threshold = a.params().number("threshold");
          warmup = a.params().integer("warmup_steps");
        }
      }
      List<AppliedAdapter> adapters =
          ctx.adapters().stream()
              .map(a -> new AppliedAdapter(a.name(), a.adapter().sha256(), a.scale()))
              .toList();
      return new State(
          r, start, 0, total, ctx.cancelScope(), threshold, warmup, 0, false, adapters);
    }

    private boolean reuses(State s) {
      return s.threshold() > 0 && s.done() >= s.warmup() && s.done() > 0 && !s.lastReused();
    }

    @Override
    public List<RequestEvent> eventsAfter(State s) {
      int every = s.request().output().previews();
      if (kind != WorkKind.DIFFUSION_STEP || every == 0 || s.done() % every != 0) {
        return List.of();
      }
      float[] rgb = new float[4 * 4 * 3];
      java.util.Arrays.fill(rgb, s.value());
      return List.of(
          new RequestEvent.MediaPreview(s.request().id(), s.done(), Tensor.of(rgb, 4, 4, 3)));
    }

    @Override
    public Step next(State s) {
      if (s.done() == s.total()) {
        return Done.INSTANCE;
      }
      if (kind == WorkKind.DIFFUSION_STEP && reuses(s)) {
        return new WorkPlan(
            id,
            instanceId(),
            kind,
            ShapeSignature.of("reused", 1),
            ResourceRequest.NONE,
            s.scope(),
            s.done(),
            () -> StepResult.of(Tensor.of(new float[] {s.value()}, 1)));
      }
      return new WorkPlan(
          id,
          instanceId(),
          kind,
          ShapeSignature.of(id, 1),
          kind == WorkKind.DIFFUSION_STEP
              ? new ResourceRequest(stepMillis(s.request().params()), 0, 0, 0)
              : ResourceRequest.NONE,
          s.scope(),
          s.done(),
          () -> StepResult.of(kind == WorkKind.DIFFUSION_STEP ? mix(s) : paint(s)));
    }

    @Override
    public State advance(State s, StepResult r) {
      float value = kind == WorkKind.DIFFUSION_STEP ? r.output().getFloat(0) : s.value();
      boolean reused = kind == WorkKind.DIFFUSION_STEP && reuses(s);
      return new State(
          s.request(),
          value,
          s.done() + 1,
          s.total(),
          s.scope(),
          s.threshold(),
          s.warmup(),
          s.reused() + (reused ? 1 : 0),
          reused,
          s.adapters());
    }

    @Override
    public LoopResult finalize(State s) {
      Tensor value = Tensor.of(new float[] {s.value()}, 1);
      if (kind == WorkKind.DIFFUSION_STEP) {
        Map<String, Long> report =
            !s.request().plugins().isEmpty()
                ? Map.of(
                    "patterncache.cached_steps",
                    (long) s.reused(),
                    "patterncache.computed_steps",
                    (long) (s.total() - s.reused()))
                : Map.of();
        return new LoopResult(Map.of("value", value), List.of(), report);
      }
      Request r = s.request();
      Tensor frames = frames(r, s.value());
      Provenance p =
          new Provenance(
              ID, "base", id, r.id(), r.params().seed(), Map.of(), List.of(), s.adapters());
      Artifact a =
          r.task() == TaskType.T2I
              ? new Artifact.ImageArtifact("image", frames.select(0, 0), p)
              : new Artifact.VideoArtifact("video", frames, r.params().fps(), p);
      return new LoopResult(Map.of("value", value), List.of(a));
    }

    @Override
    public SerializedState serialize(State s) {
      return new SerializedState(
          id,
          Map.of("value", Tensor.of(new float[] {s.value()}, 1)),
          "{\"done\":"
              + s.done()
              + ",\"reused\":"
              + s.reused()
              + ",\"last\":"
              + s.lastReused()
              + "}");
    }

    @Override
    public State deserialize(SerializedState d, Request r, ModelInstance m, LoopContext ctx) {
      State fresh = init(r, m, ctx);
      var json = d.json().replaceAll("[{}\"]", "").split(",");
      return new State(
          r,
          d.tensors().get("value").getFloat(0),
          Integer.parseInt(json[0].split(":")[1]),
          fresh.total(),
          ctx.cancelScope(),
          fresh.threshold(),
          fresh.warmup(),
          Integer.parseInt(json[1].split(":")[1]),
          Boolean.parseBoolean(json[2].split(":")[1]),
          fresh.adapters());
    }
  }

  private static Tensor mix(State s) {
    String prompt = s.request().prompt();
    if (s.done() > 0 && FAULT_ONCE.remove(prompt)) {
      throw new dev.stepweave.core.runtime.PoolFatalException("injected device loss");
    }
    StepGate gate = GATES.get(prompt);
    if (gate != null) {
      gate.entered.release();
      try {
        gate.open.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (prompt.contains("slow") || prompt.contains("paced") || prompt.contains("heavy")) {
      try {
        Thread.sleep(
            prompt.contains("heavy")
                ? (long) stepMillis(s.request().params())
                : prompt.contains("paced") ? PACED_STEP_MS : SLOW_STEP_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    float adapted = 0;
    for (AppliedAdapter a : s.adapters()) {
      adapted += ADAPTER_STEP * (float) a.scale();
    }
    float v = (s.value() * 3.1f + 0.37f + s.done() * 0.01f + adapted) % 1f;
    v = v < 0 ? v + 1 : v;
    return Tensor.of(new float[] {v}, 1);
  }

  /**
   * Holds every denoise step of the requests with this prompt until {@link StepGate#open} counts
   * down; {@link StepGate#entered} gets a permit as each step starts (a test then knows a step is
   * in flight).
   */
  record StepGate(
      java.util.concurrent.Semaphore entered, java.util.concurrent.CountDownLatch open) {
    StepGate() {
      this(new java.util.concurrent.Semaphore(0), new java.util.concurrent.CountDownLatch(1));
    }
  }

  private static final Map<String, StepGate> GATES = new java.util.concurrent.ConcurrentHashMap<>();

  private static final Set<String> FAULT_ONCE = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /**
   * The second denoise step of the next request with {@code prompt} (a prompt no other test uses)
   * throws a pool-fatal fault, once.
   */
  static void poolFaultOnce(String prompt) {
    FAULT_ONCE.add(prompt);
  }

  /** A gate on the denoise steps of {@code prompt} (a prompt no other test uses). */
  static StepGate gate(String prompt) {
    StepGate g = new StepGate();
    GATES.put(prompt, g);
    return g;
  }

  /**
   * The predicted device time of one denoise step: a millisecond per 1024 pixels of all frames
   * (256×256×9: 576 ms). A prompt containing "heavy" makes each denoise step take that long.
   */
  static double stepMillis(dev.stepweave.core.request.DiffusionParams p) {
    return (double) p.width() * p.height() * p.frames() / 1024;
  }

  /** Its denoise steps at {@link #stepMillis}, and one decode step of a tenth of that. */
  @Override
  public WorkEstimate workEstimate(Request r) {
    double step = stepMillis(r.params());
    return new WorkEstimate(
        List.of(
            new WorkEstimate.Phase(
                "denoise",
                WorkKind.DIFFUSION_STEP,
                r.params().steps(),
                new ResourceRequest(step, 0, 0, 0)),
            new WorkEstimate.Phase(
                "decode", WorkKind.VAE_TILE, 1, new ResourceRequest(step / 10, 0, 0, 0))));
  }

  private static Tensor paint(State s) {
    return Tensor.of(new float[] {s.value()}, 1);
  }

  private static Tensor frames(Request r, float value) {
    var p = r.params();
    int f = p.frames();
    int h = p.height();
    int w = p.width();
    float[] rgb = new float[f * h * w * 3];
    int i = 0;
    for (int t = 0; t < f; t++) {
      for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
          for (int c = 0; c < 3; c++) {
            float v = value + t * 0.05f + x / (float) w * 0.5f + y / (float) h * 0.25f + c * 0.3f;
            rgb[i++] = v - (float) Math.floor(v);
          }
        }
      }
    }
    return Tensor.of(rgb, f, h, w, 3);
  }

  private final Map<String, PatternLoop> loops =
      Map.of(
          "denoise", new PatternLoop("denoise", WorkKind.DIFFUSION_STEP),
          "decode", new PatternLoop("decode", WorkKind.VAE_TILE));

  private static ModelCard patternCard(String id, Set<TaskType> tasks) {
    var all = EnumSet.allOf(TaskType.class);
    List<String> program = List.of("denoise", "decode");
    Map<TaskType, List<String>> capabilities = new java.util.EnumMap<>(TaskType.class);
    tasks.forEach(t -> capabilities.put(t, program));
    return new ModelCard(
        id,
        "wan",
        Map.of(
            "dit",
            new ComponentSpec("dit", ComponentKind.DIT, "transformer", "Pattern", Precision.F32),
            "vae",
            new ComponentSpec("vae", ComponentKind.VAE, "vae", "Pattern", Precision.F32)),
        Map.of(
            "denoise", new LoopSpec("denoise", WorkKind.DIFFUSION_STEP, List.of("dit")),
            "decode", new LoopSpec("decode", WorkKind.VAE_TILE, List.of("vae"))),
        capabilities,
        RecipeSpec.base(),
        new ParitySpec(ConsistencyRung.C1, List.of(), Map.of()),
        Map.of(CACHE.id(), CacheContract.distributionAltering(CACHE.id(), "step")),
        ParallelismContract.single(),
        new PrecisionContract(Set.of(Precision.F32), Precision.F32),
        new CheckpointManifest(
            Map.of(
                "dit", new CheckpointManifest.Requirement(all, Set.of()),
                "vae", new CheckpointManifest.Requirement(all, Set.of()))),
        new GenerationDefaults(32, 32, 5, 8, 3, 1.0));
  }

  @Override
  public AdapterInfo inspectAdapter(Path file) {
    SortedSet<String> targets = new TreeSet<>();
    int rank = 0;
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      for (String key : f.keys()) {
        if (key.endsWith(LORA_A)) {
          targets.add(key.substring(0, key.length() - LORA_A.length()));
          rank = Math.max(rank, f.info(key).shape()[0]);
        } else if (!key.endsWith(LORA_B)) {
          throw new InvalidAdapterException(file + ": key '" + key + "' is not an adapter factor");
        }
      }
    } catch (CheckpointException e) {
      throw new InvalidAdapterException(e.getMessage());
    }
    if (targets.isEmpty()) {
      throw new InvalidAdapterException(file + ": no " + LORA_A + " tensors");
    }
    return new AdapterInfo("pattern", rank, List.copyOf(targets), Optional.empty());
  }

  @Override
  public String instanceId() {
    return "pattern";
  }

  @Override
  public ModelCard card() {
    return card;
  }

  /** The CPU's, for what the engine asks of a backend (its steps compute nothing on it). */
  @Override
  public Backend backend() {
    return BACKEND;
  }

  private static final Backend BACKEND = new dev.stepweave.tensor.cpu.CpuBackend();

  @Override
  public String samplerFor(Request request) {
    return "euler";
  }

  @Override
  public <T> T component(String id, Class<T> type) {
    throw new IllegalArgumentException("no components");
  }

  @Override
  public Loop<? extends LoopState> loop(String loopId) {
    PatternLoop loop = loops.get(loopId);
    if (loop == null) {
      throw new IllegalArgumentException("no loop " + loopId);
    }
    return loop;
  }
}
