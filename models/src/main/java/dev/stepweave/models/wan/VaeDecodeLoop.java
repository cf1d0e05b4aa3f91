package dev.stepweave.models.wan;

import dev.stepweave.core.card.TaskType;
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
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.models.wan.vae.DecodeState;
import dev.stepweave.models.wan.vae.DecodeTiling;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * VAE decoding: one {@code VAE_TILE} step per spatial tile of each latent frame, or per latent
 * frame when untiled (the decoder's causal caches carry between frames in the request's own {@link
 * DecodeState}; a step's call computes the next state and {@link #advance} adopts it). Frames
 * larger than {@link #AUTO_TILE_PIXELS} are decoded in spatial tiles to bound memory, with the same
 * result; overrides {@code tile = on|off|auto} and {@code tile_size} (output pixels per tile side)
 * choose otherwise.
 */
final class VaeDecodeLoop implements Loop<VaeDecodeLoop.State> {
  static final String VIDEO = "video";

  /** Above this many pixels per frame, auto mode decodes in tiles. */
  static final long AUTO_TILE_PIXELS = 640L * 640;

  private final WanModel model;

  VaeDecodeLoop(WanModel model) {
    this.model = model;
  }

  /**
   * @param latents raw (de-normalised) latents {@code [1, z, F, H, W]}
   * @param decode the decode in progress
   * @param frames where completed frames go when the request streams them ({@link
   *     OutputSpec#frames}), else null
   * @param video the host tensor the finished video is downloaded into, made meanwhile on another
   *     thread ({@link #hostVideo})
   */
  record State(
      Tensor latents,
      DecodeState decode,
      Request request,
      CancelScope scope,
      FrameEvents frames,
      CompletableFuture<Tensor> video)
      implements LoopState {
    @Override
    public int stepsDone() {
      return decode.stepsDone();
    }

    @Override
    public int totalSteps() {
      return decode.totalSteps();
    }
  }

  @Override
  public String id() {
    return WanCards.VAE_DECODE;
  }

  @Override
  public State init(Request request, ModelInstance instance, LoopContext ctx) {
    var denoised = ctx.upstream(WanCards.DENOISE);
    WanVae vae = model.vae();
    Tensor latents = vae.denormalize(denoised.tensor(DenoiseLoop.LATENTS));
    CompletableFuture<Tensor> video = hostVideo(latents);
    return new State(
        latents,
        vae.startDecode(latents, tiling(request, vae)),
        request,
        ctx.cancelScope(),
        FrameEvents.of(request, ctx, List.of(), video),
        video);
  }

  // Makes the finished videos' host tensors while the decodes run.
  private static final Executor HOST_MEMORY = Executors.newVirtualThreadPerTaskExecutor();

  /**
   * The host tensor {@code [F, H, W, 3]} that {@link #finalize} downloads the video of {@code
   * latents} into, made now on another thread: writing fresh host memory the first time costs a
   * page fault per page (0.2–1 s for the 388 MB of an 81-frame 480p video), which the decode's
   * device work then hides.
   */
  private CompletableFuture<Tensor> hostVideo(Tensor latents) {
    var cfg = model.vaeConfig();
    int[] shape = latents.shape();
    int frames = 1 + cfg.temporalCompression() * (shape[2] - 1);
    int height = shape[3] * cfg.spatialCompression();
    int width = shape[4] * cfg.spatialCompression();
    return CompletableFuture.supplyAsync(
        () -> Tensor.zeros(DType.F32, frames, height, width, 3), HOST_MEMORY);
  }

  /**
   * Emits each latent frame's decoded chunk, post-processed as {@link #finalize} does the whole
   * video, as a {@link RequestEvent.FramesDecoded}. It counts what it sent, so a resumed decode
   * (which starts from a later chunk) sends only what follows; a consumer that missed the start
   * sees a gap in the indices. A decode streamed from its first chunk lands each chunk's frames in
   * their place in the finished video's host tensor, so the video is complete on the host when the
   * last copy lands and {@link #finalize} downloads nothing more.
   */
  static final class FrameEvents {
    // Emits each chunk once its queued copy has landed, in order, off the scheduler thread.
    private static final Executor EMITTER = Executors.newVirtualThreadPerTaskExecutor();

    private final String requestId;
    private final java.util.function.Consumer<RequestEvent> emit;
    private final CompletableFuture<Tensor> video;
    private final boolean fromFirstChunk;
    private int chunks;
    private int frames;
    private CompletableFuture<Void> emitted = CompletableFuture.completedFuture(null);

    private FrameEvents(
        String requestId,
        java.util.function.Consumer<RequestEvent> emit,
        List<Tensor> sent,
        CompletableFuture<Tensor> video) {
      this.requestId = requestId;
      this.emit = emit;
      this.video = video;
      this.fromFirstChunk = sent.isEmpty();
      this.chunks = sent.size();
      for (Tensor chunk : sent) {
        frames += chunk.dim(2);
      }
    }

    /**
     * Null unless the request streams frames; the chunks {@code sent} are not sent again, and the
     * frames go into {@code video}'s tensor when none were.
     */
    static FrameEvents of(
        Request request, LoopContext ctx, List<Tensor> sent, CompletableFuture<Tensor> video) {
      return request.output().frames()
          ? new FrameEvents(request.id(), ctx::emit, sent, video)
          : null;
    }

    /** Whether every one of the video's {@code total} frames has been sent into its tensor. */
    boolean filled(int total) {
      return fromFirstChunk && frames == total;
    }

    /**
     * Queues the download of each chunk completed since the last call and its event: the copy runs
     * behind the device's work, so the scheduler goes on issuing the next step meanwhile.
     */
    void sendCompleted(Backend ops, DecodeState decode) {
      List<Tensor> decoded = decode.decoded();
      for (; chunks < decoded.size(); chunks++) {
        Tensor chunk = postprocessedOnDevice(ops, decoded.get(chunks));
        int first = frames, count = chunk.dim(0);
        Supplier<Tensor> host =
            fromFirstChunk
                ? ops.downloadQueuedInto(chunk, () -> video.join().slice(0, first, first + count))
                : ops.downloadQueued(chunk);
        emitted =
            emitted.thenRunAsync(
                () -> emit.accept(new RequestEvent.FramesDecoded(requestId, first, host.get())),
                EMITTER);
        frames += count;
      }
    }

    /** Waits until every chunk sent so far has been emitted (before the request's result). */
    void drain() {
      try {
        emitted.join();
      } catch (CompletionException e) {
        throw e.getCause() instanceof RuntimeException r ? r : e;
      }
    }
  }

  /**
   * WanPipeline's postprocess of {@code [1, 3, F, H, W]} in [-1, 1]: x/2 + 0.5 in [0, 1], channels
   * last, on the backend's device.
   */
  private static Tensor postprocessedOnDevice(Backend ops, Tensor video) {
    Tensor frames = ops.clamp(ops.affine(video, 0.5f, 0.5f), 0f, 1f);
    return ops.contiguous(frames.select(0, 0).permute(1, 2, 3, 0));
  }

  /** The tiling a request asks for, or null to decode whole frames. */
  static DecodeTiling tiling(Request request, WanVae vae) {
    return tiling(request, vae.config().spatialCompression());
  }

  /** The tiling of a VAE that compresses {@code unit} pixels a side into one latent. */
  static DecodeTiling tiling(Request request, int unit) {
    Map<String, String> o = request.overridesFor(WanCards.VAE_DECODE);
    String mode = o.getOrDefault("tile", "auto");
    var p = request.params();
    boolean tile =
        switch (mode) {
          case "on" -> true;
          case "off" -> false;
          case "auto" -> (long) p.width() * p.height() > AUTO_TILE_PIXELS;
          default ->
              throw new InvalidRequestException(
                  "vae_decode tile must be on, off or auto, got '" + mode + "'");
        };
    if (!tile) {
      return null;
    }
    int size = integer(o, "tile_size", DecodeTiling.standard().tileHeight());
    if (size <= 0 || size % unit != 0) {
      throw new InvalidRequestException(
          "vae_decode tile_size must be a positive multiple of " + unit + ", got " + size);
    }
    return new DecodeTiling(size, size);
  }

  private static int integer(Map<String, String> o, String key, int fallback) {
    try {
      return o.containsKey(key) ? Integer.parseInt(o.get(key)) : fallback;
    } catch (NumberFormatException e) {
      throw new InvalidRequestException(
          "vae_decode " + key + " must be an integer, got '" + o.get(key) + "'");
    }
  }

  @Override
  public Step next(State s) {
    if (s.decode().isDone()) {
      return Done.INSTANCE;
    }
    int[] shape = s.latents().shape();
    return new WorkPlan(
        id(),
        model.instanceId(),
        WorkKind.VAE_TILE,
        ShapeSignature.of(
            "wan-vae-decode", shape[1], shape[3], shape[4], s.decode().nextFrame() == 0 ? 1 : 0),
        resources(shape),
        s.scope(),
        s.stepsDone(),
        () -> {
          DecodeState next = model.vae().stepped(s.decode());
          return StepResult.of(next.latestOutput(), next);
        });
  }

  /**
   * What decoding one latent frame of latents {@code shape} needs: the latents and the whole video
   * resident, a peak of eight decoder-width frames, and that activation traffic as the cost model's
   * seed.
   */
  ResourceRequest resources(int[] shape) {
    var cfg = model.vaeConfig();
    int scale = cfg.spatialCompression();
    long pixels = (long) shape[3] * shape[4] * scale * scale;
    long frameBytes = pixels * 4L * cfg.decoderDim();
    long videoBytes = pixels * 3L * 4 * cfg.temporalCompression() * shape[2];
    long latentBytes = Tensor.numel(shape) * 4L;
    return new ResourceRequest(0, latentBytes + videoBytes, frameBytes * 8, 0, 0, frameBytes * 8);
  }

  /** Adopts the decode state the step computed (the previous one is spent, see WanVae#stepped). */
  @Override
  public State advance(State s, StepResult result) {
    DecodeState next = result.update(DecodeState.class);
    if (s.frames() != null) {
      s.frames().sendCompleted(model.backend(), next);
    }
    return new State(s.latents(), next, s.request(), s.scope(), s.frames(), s.video());
  }

  @Override
  public LoopResult finalize(State s) {
    Backend ops = model.backend();
    // On the host, in the tensor made meanwhile; the device copies made on the way die at once.
    Tensor made = s.video().join();
    Tensor host =
        s.frames() != null && s.frames().filled(made.dim(0))
            ? made // every frame was streamed into it; drain() below waits for the last copies
            : ops.scoped(
                () -> {
                  Tensor video = postprocessedOnDevice(ops, model.vae().finish(s.decode()));
                  if (!Arrays.equals(video.shape(), made.shape())) {
                    throw new IllegalStateException(
                        "decoded video "
                            + Arrays.toString(video.shape())
                            + " is not the shape the decode was set up for: "
                            + made);
                  }
                  ops.downloadInto(video, made);
                  return made;
                });
    // The video is on the host (and the streamed chunks' copies are queued before this on the
    // stream): the decode's frames need not wait for the collector.
    s.decode().release();
    if (s.frames() != null) {
      s.frames().drain();
    }
    // What the decode's peak left cached is given back by the engine once the request is done.
    var provenance = WanProvenance.of(model, s.request(), id());
    Artifact artifact =
        s.request().task() == TaskType.T2I
            ? new Artifact.ImageArtifact("image", host.select(0, 0), provenance)
            : new Artifact.VideoArtifact(VIDEO, host, s.request().params().fps(), provenance);
    return new LoopResult(Map.of(VIDEO, host), List.of(artifact));
  }

  /** The state's tensors as they are, on the device: the runtime copies them when it must. */
  @Override
  public SerializedState serialize(State s) {
    Map<String, Tensor> tensors = new HashMap<>();
    tensors.put("latents", s.latents());
    s.decode().tensors().forEach((k, v) -> tensors.put("decode." + k, v));
    var json = StateJson.object();
    s.decode().scalars().forEach(json::put);
    return new SerializedState(id(), tensors, json.toString());
  }

  @Override
  public State deserialize(
      SerializedState data, Request request, ModelInstance instance, LoopContext ctx) {
    Tensor latents = model.restored(data.tensors().get("latents"));
    Map<String, Tensor> tensors = new HashMap<>();
    data.tensors()
        .forEach(
            (k, v) -> {
              if (k.startsWith("decode.")) {
                tensors.put(k.substring("decode.".length()), model.restored(v));
              }
            });
    Map<String, String> scalars = new HashMap<>();
    StateJson.parse(data.json(), id())
        .properties()
        .forEach(e -> scalars.put(e.getKey(), e.getValue().asText()));
    DecodeState decode =
        model.vae().restoreDecode(latents, tiling(request, model.vae()), tensors, scalars);
    CompletableFuture<Tensor> video = hostVideo(latents);
    return new State(
        latents,
        decode,
        request,
        ctx.cancelScope(),
        FrameEvents.of(request, ctx, decode.decoded(), video),
        video);
  }
}
