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
import dev.stepweave.core.request.Request;
import dev.stepweave.models.wan.vae.DecodeState;
import dev.stepweave.models.wan.vae.DecodeTiling;
import dev.stepweave.models.wan.vae.TileGrid;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * VAE decoding: one {@code VAE_TILE} step per latent frame of each spatial tile (the decoder's
 * causal cache carries between a tile's frames). Frames larger than {@link #AUTO_TILE_PIXELS} are
 * decoded in blended spatial tiles to bound memory; overrides {@code tile = on|off|auto}, {@code
 * tile_size}, {@code tile_stride} (pixels) choose otherwise.
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
   * @param grid the spatial tiles (one covering everything when untiled)
   * @param decoded finished tiles' unclamped output, in grid order
   * @param current the decode of tile {@code decoded.size()} in progress
   */
  record State(
      Tensor latents, TileGrid grid, List<Tensor> decoded, DecodeState current, Request request, CancelScope scope)
      implements LoopState {
    State {
      decoded = List.copyOf(decoded);
    }

    int latentFrames() {
      return latents.dim(2);
    }

    @Override
    public int stepsDone() {
      return decoded.size() * latentFrames() + (current == null ? 0 : current.nextFrame());
    }

    @Override
    public int totalSteps() {
      return grid.size() * latentFrames();
    }
  }

  @Override
  public String id() {
    return WanCards.VAE_DECODE;
  }

  @Override
  public State init(Request request, ModelInstance instance, LoopContext ctx) {
    var denoised = ctx.upstream().get(WanCards.DENOISE);
    if (denoised == null) {
      throw new IllegalStateException("vae_decode needs the denoise loop's result");
    }
    WanVae vae = model.vae();
    Tensor latents = vae.denormalize(denoised.tensor(DenoiseLoop.LATENTS));
    TileGrid grid = TileGrid.of(latents, tiling(request, vae), vae.config().spatialCompression());
    return new State(latents, grid, List.of(), vae.startDecode(grid.tile(latents, 0)), request, ctx.cancelScope());
  }

  /** The tiling a request asks for, or null to decode whole frames. */
  static DecodeTiling tiling(Request request, WanVae vae) {
    Map<String, String> o = request.overridesFor(WanCards.VAE_DECODE);
    String mode = o.getOrDefault("tile", "auto");
    var p = request.params();
    boolean tile =
        switch (mode) {
          case "on" -> true;
          case "off" -> false;
          case "auto" -> (long) p.width() * p.height() > AUTO_TILE_PIXELS;
          default -> throw new InvalidRequestException("vae_decode tile must be on, off or auto, got '" + mode + "'");
        };
    if (!tile) {
      return null;
    }
    DecodeTiling d = DecodeTiling.diffusersDefault();
    int size = integer(o, "tile_size", d.minHeight());
    int stride = integer(o, "tile_stride", d.strideHeight());
    int unit = vae.config().spatialCompression();
    if (size % unit != 0 || stride % unit != 0 || stride <= 0 || stride > size) {
      throw new InvalidRequestException(
          "vae_decode tile_size and tile_stride must be multiples of " + unit + " with 0 < stride <= size, got " + size + "/" + stride);
    }
    return new DecodeTiling(size, size, stride, stride);
  }

  private static int integer(Map<String, String> o, String key, int fallback) {
    try {
      return o.containsKey(key) ? Integer.parseInt(o.get(key)) : fallback;
    } catch (NumberFormatException e) {
      throw new InvalidRequestException("vae_decode " + key + " must be an integer, got '" + o.get(key) + "'");
    }
  }

  @Override
  public Step next(State s) {
    if (s.current() == null) {
      return Done.INSTANCE;
    }
    Tensor tile = s.current().latents();
    int[] shape = tile.shape();
    long pixels = (long) shape[3] * shape[4] * 64;
    long frameBytes = pixels * 4 * model.vae().config().baseDim() * 4L;
    return new WorkPlan(
        id(),
        model.instanceId(),
        WorkKind.VAE_TILE,
        ShapeSignature.of("wan-vae-decode", shape[1], shape[3], shape[4], s.current().nextFrame() == 0 ? 1 : 0),
        new ResourceRequest(0, s.latents().byteSize() + pixels * 3 * 4 * s.latentFrames() * 4, frameBytes * 8, 0),
        s.scope(),
        s.stepsDone(),
        () -> {
          // The decode state is this request's own; stepping it is the step's work.
          model.vae().step(s.current());
          return StepResult.of(null);
        });
  }

  @Override
  public State advance(State s, StepResult result) {
    if (!s.current().isDone()) {
      return s;
    }
    List<Tensor> decoded = new ArrayList<>(s.decoded());
    decoded.add(model.vae().finishUnclamped(s.current()));
    DecodeState next =
        decoded.size() < s.grid().size() ? model.vae().startDecode(s.grid().tile(s.latents(), decoded.size())) : null;
    return new State(s.latents(), s.grid(), decoded, next, s.request(), s.scope());
  }

  @Override
  public LoopResult finalize(State s) {
    Backend ops = model.backend();
    Tensor video = ops.clamp(s.grid().assemble(ops, s.decoded()), -1f, 1f); // [1, 3, F, H, W]
    // WanPipeline's postprocess: x/2 + 0.5, clamped to [0, 1], channels last.
    Tensor frames = ops.clamp(ops.affine(video, 0.5f, 0.5f), 0f, 1f);
    Tensor host = ops.download(ops.contiguous(frames.select(0, 0).permute(1, 2, 3, 0))); // [F, H, W, 3]
    var provenance = WanProvenance.of(model, s.request(), id());
    Artifact artifact =
        s.request().task() == TaskType.T2I
            ? new Artifact.ImageArtifact("image", host.select(0, 0), provenance)
            : new Artifact.VideoArtifact(VIDEO, host, s.request().params().fps(), provenance);
    return new LoopResult(Map.of(VIDEO, host), List.of(artifact));
  }

  @Override
  public SerializedState serialize(State s) {
    Backend ops = model.backend();
    Map<String, Tensor> tensors = new HashMap<>();
    tensors.put("latents", ops.download(s.latents()));
    for (int i = 0; i < s.decoded().size(); i++) {
      tensors.put("tile." + i, ops.download(s.decoded().get(i)));
    }
    var json = StateJson.object();
    json.put("tiles_done", s.decoded().size());
    if (s.current() != null) {
      s.current().tensors().forEach((k, v) -> tensors.put("current." + k, ops.download(v)));
      var cur = json.putObject("current");
      s.current().scalars().forEach(cur::put);
    }
    return new SerializedState(id(), tensors, json.toString());
  }

  @Override
  public State deserialize(SerializedState data, Request request, ModelInstance instance, LoopContext ctx) {
    Backend ops = model.backend();
    WanVae vae = model.vae();
    var json = StateJson.parse(data.json(), id());
    Tensor latents = ops.upload(data.tensors().get("latents"), DType.F32);
    TileGrid grid = TileGrid.of(latents, tiling(request, vae), vae.config().spatialCompression());
    List<Tensor> decoded = new ArrayList<>();
    for (int i = 0; i < json.get("tiles_done").asInt(); i++) {
      decoded.add(ops.upload(data.tensors().get("tile." + i), DType.F32));
    }
    DecodeState current = null;
    if (json.has("current")) {
      Map<String, Tensor> tensors = new HashMap<>();
      data.tensors().forEach(
          (k, v) -> {
            if (k.startsWith("current.")) {
              tensors.put(k.substring("current.".length()), ops.upload(v, DType.F32));
            }
          });
      Map<String, String> scalars = new HashMap<>();
      json.get("current").properties().forEach(e -> scalars.put(e.getKey(), e.getValue().asText()));
      current = vae.restoreDecode(grid.tile(latents, decoded.size()), tensors, scalars);
    }
    return new State(latents, grid, decoded, current, request, ctx.cancelScope());
  }
}
