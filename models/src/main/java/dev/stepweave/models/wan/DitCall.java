package dev.stepweave.models.wan;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.PluginState;
import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.cache.BlockCacheRow;
import dev.stepweave.models.wan.cache.DenoiseHooks;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One request's guided transformer prediction at one denoising step. Alone it runs the branches as
 * its guidance policy dispatches them; batched with other requests' calls it runs every request's
 * branches as one transformer forward (each row with its own timestep and text), then splits the
 * rows and combines each request's branches with its own policy. The transformer is
 * batch-invariant, so a request's prediction is bit-identical either way.
 *
 * <p>With a block cache, every batch row (request × CFG branch) reads and writes its own request's
 * slot with its own settings and step, so batching changes nothing there either. The call is pure:
 * it writes the slots of a copy of each request's {@link PluginState} and returns that copy as its
 * result's update, which the loop folds in ({@link DenoiseLoop#advance}); a batch that throws
 * leaves every state as it was, and its members re-run alone from there. A step cache records the
 * computed prediction the same way; a step it reuses is planned without a {@code DitCall} (see
 * {@link DenoiseLoop#next}).
 *
 * <p>Without block hooks and taps the forward is {@linkplain Backend#replayable replayable}: a
 * device backend records it once per input shapes and dtypes and replays the recording.
 *
 * @param latents the request's current latents {@code [1, C, F, H, W]}
 * @param condition the request's image-to-video condition, concatenated to its latents on the
 *     channels in every row of its branches, or null
 * @param firstFrame a TI2V request's encoded image, imposed as the first latent frame of its rows
 *     (whose tokens get timestep 0), or null
 * @param image the request's image-encoder states, the same for both of its branches, or null
 * @param timestep the sampler's timestep for this step: one per row, or with per-token timesteps
 *     ({@link WanModel#perTokenTimesteps}) one per token of the row, 0 on the first frame's tokens
 *     when {@code firstFrame} gives that frame
 * @param cond conditional text embeddings {@code [1, L, D]}
 * @param uncond unconditional text embeddings, or null when the policy needs none
 * @param step the loop step (policies such as CFG-Zero* depend on it)
 * @param plugins the request's plugin state (block- and step-cache slots), read only
 * @param hooks the request's extension hooks
 * @param taps the observers' tap sink for this step ({@link TapSink#NONE} when none wants taps)
 * @param expert the transformer expert that runs this step ({@code transformer}, or {@code
 *     transformer_2} for the low-noise steps of a two-expert checkpoint)
 * @param adapters the request's adapters at their strengths, applied to both of its branches' rows
 *     (rows of other requests in a batch carry their own)
 */
record DitCall(
    WanModel model,
    Tensor latents,
    float timestep,
    Tensor cond,
    Tensor uncond,
    Tensor condition,
    Tensor firstFrame,
    Tensor image,
    CfgPolicy policy,
    int step,
    PluginState plugins,
    DenoiseHooks hooks,
    TapSink taps,
    String expert,
    List<AdapterRows.Applied> adapters)
    implements BatchableCall {
  private static final String COND = "cond";
  private static final String UNCOND = "uncond";
  // A model instance runs on one device today; a sequence- or CFG-parallel plan will name itself.
  private static final String PARALLEL_PLAN = "single";

  /**
   * Calls of one model batch together when their block caches compute the same blocks; a call whose
   * observers want taps batches with none (its taps are its own). The plan's shape signature fixes
   * the sizes.
   */
  @Override
  public Object batchKey() {
    return List.of(model, expert, hooks.blockLayout(), taps, image == null);
  }

  /** The expert it runs, which must be awake while it does (experts kept one at a time). */
  @Override
  public java.util.Optional<String> awakeComponent() {
    return java.util.Optional.of(expert);
  }

  /**
   * The block-cache slots of this call's branches: per expert, so no cached residual of one expert
   * is reused by the other.
   */
  private List<String> branches() {
    String suffix = expert.equals(ExpertRouting.FIRST) ? "" : "@" + expert;
    return policy.needsUncond() ? List.of(COND + suffix, UNCOND + suffix) : List.of(COND + suffix);
  }

  @Override
  public StepResult run() {
    Backend ops = model.backend();
    PluginState work = plugins.copy();
    Tensor prediction;
    List<String> branches = branches();
    Tensor x = input(ops);
    if (!policy.needsUncond()) {
      prediction = forward(ops, x, 1, cond, work, branches);
    } else if (policy.batched()) {
      Tensor both =
          forward(
              ops,
              ops.concat(List.of(x, x), 0),
              2,
              ops.concat(List.of(cond, uncond), 0),
              work,
              branches);
      prediction = policy.combine(ops, both.slice(0, 0, 1), both.slice(0, 1, 2), step);
    } else {
      Tensor c = forward(ops, x, 1, cond, work, branches.subList(0, 1));
      Tensor u = forward(ops, x, 1, uncond, work, branches.subList(1, 2));
      prediction = policy.combine(ops, c, u, step);
    }
    taps.tap("prediction", prediction);
    hooks.computedStep(ops, work, latents, prediction, step);
    return StepResult.of(prediction, work);
  }

  /**
   * The transformer's input: the latents (with a TI2V request's first frame imposed), with the
   * condition after them for image-to-video.
   */
  private Tensor input(Backend ops) {
    Tensor x = firstFrame == null ? latents : DenoiseLoop.withFirstFrame(ops, latents, firstFrame);
    return condition == null ? x : ops.concat(List.of(x, condition), 1);
  }

  /** The image states of {@code rows} rows of this call, or null without an image encoder. */
  private Tensor images(Backend ops, int rows) {
    return image == null ? null : ops.concat(java.util.Collections.nCopies(rows, image), 0);
  }

  private Tensor forward(
      Backend ops, Tensor x, int batch, Tensor text, PluginState work, List<String> branches) {
    BlockHooks blocks = DenoiseHooks.blocks(hooks.rows(work, branches, step), ops);
    AdapterRows rows = AdapterRows.of(java.util.Collections.nCopies(batch, adapters));
    return transformer(ops, x, timesteps(ops, batch), text, images(ops, batch), taps, blocks, rows);
  }

  /**
   * The transformer forward, replayable on the plain path. Block hooks decide on the host which
   * blocks run and taps hand tensors to observers, neither of which a recording can repeat, so with
   * either the forward runs eagerly.
   */
  private Tensor transformer(
      Backend ops,
      Tensor x,
      Tensor t,
      Tensor text,
      Tensor images,
      TapSink sink,
      BlockHooks blocks,
      AdapterRows rows) {
    WanTransformer dit = model.transformer(expert);
    if (blocks != BlockHooks.NONE || sink != TapSink.NONE) {
      return dit.forward(x, t, text, images, sink, blocks, rows);
    }
    List<Tensor> inputs = images == null ? List.of(x, t, text) : List.of(x, t, text, images);
    GraphKey key =
        GraphKey.of(
                // A weight sync rebuilds the transformer in new buffers: a graph recorded before
                // it would replay the old weights.
                model.instanceId() + "@weights-v" + model.weightsVersion(),
                expert,
                WanCards.DENOISE,
                WorkKind.DIFFUSION_STEP.name(),
                model.precisionOf(expert).wireName(),
                PARALLEL_PLAN,
                inputs)
            .withAdapters(rows.composition());
    return ops.replayable(
        key,
        inputs,
        in ->
            dit.forward(
                in.get(0),
                in.get(1),
                in.get(2),
                in.size() > 3 ? in.get(3) : null,
                TapSink.NONE,
                BlockHooks.NONE,
                rows));
  }

  @Override
  public List<StepResult> runBatch(List<BatchableCall> calls) {
    Backend ops = model.backend();
    List<DitCall> dits = calls.stream().map(DitCall.class::cast).toList();
    List<Tensor> xs = new ArrayList<>();
    List<Tensor> texts = new ArrayList<>();
    List<Tensor> images = new ArrayList<>();
    List<DitCall> timestepsOf = new ArrayList<>(); // the call of each row
    List<PluginState> works = new ArrayList<>(dits.size());
    List<BlockCacheRow> rows = new ArrayList<>();
    List<List<AdapterRows.Applied>> adapterRows = new ArrayList<>();
    for (DitCall d : dits) {
      PluginState work = d.plugins().copy();
      works.add(work);
      Tensor x = d.input(ops);
      int rowsOfCall = d.policy().needsUncond() ? 2 : 1;
      for (int r = 0; r < rowsOfCall; r++) {
        xs.add(x);
        texts.add(r == 0 ? d.cond() : d.uncond());
        timestepsOf.add(d);
        adapterRows.add(d.adapters());
        if (d.image() != null) {
          images.add(d.image());
        }
      }
      rows.addAll(d.hooks().rows(work, d.branches(), d.step()));
    }
    Tensor out =
        transformer(
            ops,
            ops.concat(xs, 0),
            ops.upload(timestepRows(timestepsOf), DType.F32),
            ops.concat(texts, 0),
            images.isEmpty() ? null : ops.concat(images, 0),
            TapSink.NONE, // calls with taps never batch (see batchKey)
            DenoiseHooks.blocks(rows, ops),
            AdapterRows.of(adapterRows));
    List<StepResult> results = new ArrayList<>(dits.size());
    int row = 0;
    for (DitCall d : dits) {
      Tensor c = out.slice(0, row, row + 1);
      row++;
      Tensor u = null;
      if (d.policy().needsUncond()) {
        u = out.slice(0, row, row + 1);
        row++;
      }
      Tensor prediction = d.policy().combine(ops, c, u, d.step());
      PluginState work = works.get(results.size());
      d.hooks().computedStep(ops, work, d.latents(), prediction, d.step());
      results.add(StepResult.of(prediction, work));
    }
    return results;
  }

  private Tensor timesteps(Backend ops, int batch) {
    return ops.upload(timestepRows(java.util.Collections.nCopies(batch, this)), DType.F32);
  }

  /**
   * The timestep of each row, row r being of call {@code rows.get(r)}: {@code [B]}, or {@code [B,
   * L]} with per-token timesteps, each row its own call's (the sampler's timestep on every token, 0
   * on the first latent frame's tokens of a call with a first frame).
   */
  private static Tensor timestepRows(List<DitCall> rows) {
    DitCall first = rows.getFirst();
    if (!first.model().perTokenTimesteps()) {
      float[] t = new float[rows.size()];
      for (int r = 0; r < t.length; r++) {
        t[r] = rows.get(r).timestep();
      }
      return Tensor.of(t, t.length);
    }
    int[] shape = first.latents().shape();
    var patch = first.model().transformerConfig().patchSize();
    int perFrame = (shape[3] / patch.h()) * (shape[4] / patch.w());
    int tokens = (shape[2] / patch.t()) * perFrame;
    float[] t = new float[rows.size() * tokens];
    for (int r = 0; r < rows.size(); r++) {
      DitCall d = rows.get(r);
      // The reference's mask·t: 1·t everywhere, 0·t = 0 on the imposed first frame.
      int from = r * tokens + (d.firstFrame() == null ? 0 : perFrame);
      Arrays.fill(t, from, (r + 1) * tokens, d.timestep());
    }
    return Tensor.of(t, rows.size(), tokens);
  }
}
