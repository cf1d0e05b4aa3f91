package dev.stepweave.models.wan;

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
import dev.stepweave.models.clip.AntialiasedResize;
import dev.stepweave.models.clip.RgbImage;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * The image-to-video condition: one {@code VAE_TILE} step that encodes the condition video — the
 * request's image resized to the video's size, then {@code frames − 1} zero frames — with the VAE,
 * normalises the posterior mean, and puts the mask before it: {@code [1, 4 + z_dim, F', H', W']},
 * concatenated to the noisy latents at every denoising step, as WanImageToVideoPipeline's {@code
 * prepare_latents} makes it. The image is resized as the reference's {@code VideoProcessor} does:
 * straight to width × height (the aspect ratio is the request's), Pillow's Lanczos, then {@code 2 ·
 * v/255 − 1}.
 *
 * <p>With per-token timesteps (the Wan2.2 TI2V layout) the loop encodes the image alone, resized
 * the same way, into the normalised first latent frame {@code [1, z_dim, 1, H', W']} ({@link
 * #FIRST_FRAME}), as the reference's {@code prepare_latents} does with {@code expand_timesteps}; a
 * TI2V request without an image runs no step and hands on nothing (text-to-video).
 */
final class VaeEncodeLoop implements Loop<VaeEncodeLoop.State> {
  static final String CONDITION = "condition";
  static final String FIRST_FRAME = "first_frame";

  private final WanModel model;

  VaeEncodeLoop(WanModel model) {
    this.model = model;
  }

  /**
   * @param image the request's input image, or null for a TI2V request without one
   * @param condition the condition (or first frame) once encoded, else null
   */
  record State(ModalPart.Image image, Tensor condition, Request request, CancelScope scope)
      implements LoopState {
    @Override
    public int stepsDone() {
      return condition == null ? 0 : 1;
    }

    @Override
    public int totalSteps() {
      return image == null ? 0 : 1;
    }
  }

  @Override
  public String id() {
    return WanCards.VAE_ENCODE;
  }

  @Override
  public State init(Request request, ModelInstance instance, LoopContext ctx) {
    return new State(imageOf(request), null, request, ctx.cancelScope());
  }

  /** The request's image: i2v needs one, ti2v takes at most one. */
  private ModalPart.Image imageOf(Request request) {
    return model.perTokenTimesteps() && request.images().isEmpty() ? null : request.image();
  }

  /** The name this loop hands its tensor on under. */
  private String resultName() {
    return model.perTokenTimesteps() ? FIRST_FRAME : CONDITION;
  }

  @Override
  public Step next(State s) {
    if (s.condition() != null || s.image() == null) {
      return Done.INSTANCE;
    }
    var p = s.request().params();
    return new WorkPlan(
        id(),
        model.instanceId(),
        WorkKind.VAE_TILE,
        ShapeSignature.of("wan-vae-encode", p.frames(), p.height(), p.width()),
        resources(s.request()),
        s.scope(),
        0,
        () ->
            StepResult.of(
                model.perTokenTimesteps()
                    ? firstFrame(s.image(), s.request())
                    : condition(s.image(), s.request())));
  }

  /** The image alone, encoded and normalised: the first latent frame {@code [1, z, 1, H', W']}. */
  private Tensor firstFrame(ModalPart.Image image, Request request) {
    var p = request.params();
    Tensor video =
        model.backend().upload(conditionVideo(image, p.width(), p.height(), 1), DType.F32);
    var vae = model.vae();
    return vae.normalize(vae.encode(video).mean()); // the posterior's mode, "argmax"
  }

  private Tensor condition(ModalPart.Image image, Request request) {
    Backend ops = model.backend();
    var p = request.params();
    Tensor video = ops.upload(conditionVideo(image, p.width(), p.height(), p.frames()), DType.F32);
    var vae = model.vae();
    Tensor latents = vae.normalize(vae.encode(video).mean()); // the posterior's mode, "argmax"
    int[] shape = latents.shape();
    Tensor mask =
        ops.upload(firstFrameMask(shape[2], shape[3], shape[4]), DType.F32); // [1, 4, F', H', W']
    return ops.concat(List.of(mask, latents), 1);
  }

  /** {@code [1, 3, frames, height, width]}: the resized image in [-1, 1], then zeros. */
  static Tensor conditionVideo(ModalPart.Image image, int width, int height, int frames) {
    RgbImage resized =
        AntialiasedResize.resize(
            new RgbImage(image.width(), image.height(), image.rgb()),
            width,
            height,
            AntialiasedResize.Filter.LANCZOS,
            AntialiasedResize.Rounding.PILLOW);
    int plane = width * height;
    float[] v = new float[3 * frames * plane];
    for (int c = 0; c < 3; c++) {
      int base = c * frames * plane; // frame 0 of channel c
      for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
          // float32 as the reference: pil_to_numpy's v / 255, then normalize's 2·v − 1.
          float unit = resized.get(x, y, c) / 255f;
          v[base + y * width + x] = 2f * unit - 1f;
        }
      }
    }
    return Tensor.of(v, 1, 3, frames, height, width);
  }

  /**
   * The mask: the reference marks the given frame (repeated once per frame the VAE folds into the
   * first latent frame) with ones and the rest with zeros, then folds the frames into {@value
   * WanCards#CONDITION_CHANNELS} channels — ones on the first latent frame, zeros after.
   */
  static Tensor firstFrameMask(int latentFrames, int height, int width) {
    int plane = height * width;
    float[] m = new float[WanCards.CONDITION_CHANNELS * latentFrames * plane];
    for (int c = 0; c < WanCards.CONDITION_CHANNELS; c++) {
      java.util.Arrays.fill(m, c * latentFrames * plane, c * latentFrames * plane + plane, 1f);
    }
    return Tensor.of(m, 1, WanCards.CONDITION_CHANNELS, latentFrames, height, width);
  }

  /**
   * What one condition encode needs: the condition video (the image alone with per-token timesteps)
   * and the condition resident, a peak of eight encoder-width frames, and that traffic as the cost
   * model's seed.
   */
  ResourceRequest resources(Request request) {
    var p = request.params();
    var cfg = model.vaeConfig();
    long pixels = (long) p.width() * p.height();
    long videoBytes = pixels * 3L * 4 * encodedFrames(request);
    long conditionBytes = conditionBytes(model, request);
    long frameBytes = pixels * 4L * cfg.decoderDim();
    return new ResourceRequest(
        0, videoBytes + conditionBytes, frameBytes * 8, 0, 0, frameBytes * 8);
  }

  /** The frames the VAE encodes: the condition video, or the image alone with per-token steps. */
  private int encodedFrames(Request request) {
    return model.perTokenTimesteps() ? 1 : request.params().frames();
  }

  /**
   * The bytes of what the loop hands on: the mask and the condition latents {@code [1, 4 + z, F',
   * H', W']}, or with per-token timesteps the first latent frame {@code [1, z, 1, H', W']}.
   */
  static long conditionBytes(WanModel model, Request request) {
    int[] latents = model.latentShape(request);
    long plane = Tensor.numel(latents) / latents[1] / latents[2];
    return model.perTokenTimesteps()
        ? plane * latents[1] * 4L
        : plane * latents[2] * (latents[1] + WanCards.CONDITION_CHANNELS) * 4L;
  }

  @Override
  public State advance(State s, StepResult result) {
    return new State(s.image(), result.output(), s.request(), s.scope());
  }

  @Override
  public LoopResult finalize(State s) {
    return new LoopResult(
        s.condition() == null ? Map.of() : Map.of(resultName(), s.condition()), List.of());
  }

  /** The state's tensors as they are, on the device: the runtime copies them when it must. */
  @Override
  public SerializedState serialize(State s) {
    var json = StateJson.object();
    json.put("done", s.stepsDone());
    return new SerializedState(
        id(), s.condition() == null ? Map.of() : Map.of(CONDITION, s.condition()), json.toString());
  }

  /** The image is the request's: a resumed run re-reads it from the request. */
  @Override
  public State deserialize(
      SerializedState data, Request request, ModelInstance instance, LoopContext ctx) {
    boolean done = StateJson.parse(data.json(), id()).get("done").asInt() == 1;
    return new State(
        imageOf(request),
        done ? model.restored(data.tensors().get(CONDITION)) : null,
        request,
        ctx.cancelScope());
  }
}
