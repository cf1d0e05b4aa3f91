package dev.stepweave.models.wan.transformer;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.Arrays;
import java.util.List;

/**
 * The Wan diffusion transformer (diffusers' {@code WanTransformer3DModel}): patchify the latent
 * video, run the blocks conditioned on the timestep, the text and — for image-to-video checkpoints
 * (Wan2.1 I2V) — the image tokens, and project back to a latent-shaped prediction. The timestep is
 * one per sample, or one per token (Wan2.2 TI2V's {@code expand_timesteps}: every token gets its
 * own modulation, in the blocks and in the output norm). Every dimension comes from the config; all
 * compute goes through the weights' {@link Backend}. Each batch row's result depends only on that
 * row's inputs.
 *
 * <p>Taps: {@code rope_cos}, {@code rope_sin} ({@code [1, L, 1, headDim]}), {@code
 * patch_embedding}, {@code temb}, {@code timestep_proj}, {@code context}, {@code image_context}
 * (with image states), {@code block_<i>}.
 */
public final class WanTransformer {
  private final WanTransformerConfig cfg;
  private final Backend backend;
  private final WanRotaryEmbedding rotary;
  private final Tensor patchWeight;
  private final Tensor patchBias;
  private final ConditionEmbedder conditions;
  private final WanTransformerBlock[] blocks;
  private final Tensor outputScaleShiftTable; // [1, 2, dim]: shift, scale
  private final Linear projOut;

  private WanTransformer(
      WanTransformerConfig cfg,
      Backend backend,
      WanRotaryEmbedding rotary,
      Tensor patchWeight,
      Tensor patchBias,
      ConditionEmbedder conditions,
      WanTransformerBlock[] blocks,
      Tensor outputScaleShiftTable,
      Linear projOut) {
    this.cfg = cfg;
    this.backend = backend;
    this.rotary = rotary;
    this.patchWeight = patchWeight;
    this.patchBias = patchBias;
    this.conditions = conditions;
    this.blocks = blocks;
    this.outputScaleShiftTable = outputScaleShiftTable;
    this.projOut = projOut;
  }

  /**
   * Takes every tensor by its diffusers name with the shape {@code cfg} implies and fails on any
   * tensor left over.
   *
   * @throws dev.stepweave.tensor.io.CheckpointException naming the file and tensor that is missing,
   *     mis-shaped or unexpected
   */
  public static WanTransformer load(WanTransformerConfig cfg, Weights weights) {
    int dim = cfg.innerDim();
    WanTransformerConfig.PatchSize p = cfg.patchSize();
    Tensor patchWeight =
        weights.take("patch_embedding.weight", dim, cfg.inChannels(), p.t(), p.h(), p.w());
    Tensor patchBias = weights.take("patch_embedding.bias", dim);
    ConditionEmbedder conditions = ConditionEmbedder.load(cfg, weights.scope("condition_embedder"));
    WanTransformerBlock[] blocks = new WanTransformerBlock[cfg.numLayers()];
    for (int i = 0; i < blocks.length; i++) {
      blocks[i] = WanTransformerBlock.load(cfg, weights.scope("blocks." + i));
    }
    Tensor outputTable = weights.take("scale_shift_table", 1, 2, dim);
    Linear projOut = Linear.take(weights, "proj_out", dim, cfg.outChannels() * p.volume());
    weights.finish();
    Backend backend = weights.backend();
    return new WanTransformer(
        cfg,
        backend,
        WanRotaryEmbedding.create(backend, cfg.attentionHeadDim(), cfg.ropeMaxSeqLen()),
        patchWeight,
        patchBias,
        conditions,
        blocks,
        outputTable,
        projOut);
  }

  public WanTransformerConfig config() {
    return cfg;
  }

  /**
   * Predicts the flow (or noise) for a batch of latent videos, without image states.
   *
   * @param hiddenStates latents {@code [B, in_channels, F, H, W]}, F/H/W divisible by the patch
   * @param timestep float timesteps {@code [B]}, or {@code [B, L]} (one per token, L the number of
   *     patches)
   * @param encoderHiddenStates text-encoder states {@code [B, S, text_dim]}
   * @return {@code [B, out_channels, F, H, W]}
   */
  public Tensor forward(
      Tensor hiddenStates, Tensor timestep, Tensor encoderHiddenStates, TapSink taps) {
    return forward(hiddenStates, timestep, encoderHiddenStates, null, taps);
  }

  /**
   * Like {@link #forward(Tensor, Tensor, Tensor, TapSink)}, with the image-encoder states an
   * image-conditioned config needs.
   *
   * @param encoderHiddenStatesImage {@code [B, S_img, image_dim]} — with {@code pos_embed_seq_len}
   *     P, {@code [B, P, image_dim]} or the reference's {@code [2B, P/2, image_dim]} —, or null;
   *     required exactly when the config has image conditioning
   */
  public Tensor forward(
      Tensor hiddenStates,
      Tensor timestep,
      Tensor encoderHiddenStates,
      Tensor encoderHiddenStatesImage,
      TapSink taps) {
    return forward(
        hiddenStates,
        timestep,
        encoderHiddenStates,
        encoderHiddenStatesImage,
        taps,
        BlockHooks.NONE,
        AdapterRows.NONE);
  }

  /**
   * Like {@link #forward(Tensor, Tensor, Tensor, TapSink)}, letting {@code hooks} run the blocks
   * (skipping some by a cached residual). Skipped blocks produce no taps.
   *
   * <p>Activations live in the backend's {@link Backend#activationDType()} from the patch embedding
   * to the output projection; the result is F32. Memory is released as it dies: each block's
   * intermediates and the previous block's output once a block returns ({@link Backend#chain}), and
   * without hooks everything else the forward made but its result ({@link Backend#scoped}; a hook
   * may keep tensors of the forward, such as cached residuals).
   */
  public Tensor forward(
      Tensor hiddenStates,
      Tensor timestep,
      Tensor encoderHiddenStates,
      TapSink taps,
      BlockHooks hooks) {
    return forward(hiddenStates, timestep, encoderHiddenStates, taps, hooks, AdapterRows.NONE);
  }

  /**
   * Like {@link #forward(Tensor, Tensor, Tensor, TapSink, BlockHooks)}, each batch row adding its
   * own adapters' updates to the layers they target (the weights are never changed).
   *
   * @param adapters one list of adapters per batch row, or {@link AdapterRows#NONE}
   */
  public Tensor forward(
      Tensor hiddenStates,
      Tensor timestep,
      Tensor encoderHiddenStates,
      TapSink taps,
      BlockHooks hooks,
      AdapterRows adapters) {
    return forward(hiddenStates, timestep, encoderHiddenStates, null, taps, hooks, adapters);
  }

  /**
   * The whole forward: {@link #forward(Tensor, Tensor, Tensor, Tensor, TapSink)}'s inputs, with
   * {@code hooks} and per-row {@code adapters} as in {@link #forward(Tensor, Tensor, Tensor,
   * TapSink, BlockHooks, AdapterRows)}.
   */
  public Tensor forward(
      Tensor hiddenStates,
      Tensor timestep,
      Tensor encoderHiddenStates,
      Tensor encoderHiddenStatesImage,
      TapSink taps,
      BlockHooks hooks,
      AdapterRows adapters) {
    Inputs in = new Inputs(hiddenStates, timestep, encoderHiddenStates, encoderHiddenStatesImage);
    checkInputs(in);
    return hooks == BlockHooks.NONE
        ? backend.scoped(() -> run(in, taps, BlockHooks.NONE, adapters))
        : run(in, taps, hooks, adapters);
  }

  /**
   * What the blocks' cross-attention reads: the tokens attended through the text projections and
   * those attended through the image projections (null for none).
   */
  private record CrossContext(Tensor text, Tensor image) {
    /**
     * diffusers' attention processor takes the last 512 tokens of the [image ‖ text] context as
     * text and the tokens before them as the image's (512: its text encoder's context length,
     * hard-coded), slicing as Python does when the context is shorter. With the pipelines' 512 text
     * tokens that is exactly image | text; with another text length tokens move between the two
     * attentions, and the golden recordings (16 or 7 text tokens) depend on it.
     */
    private static final int REFERENCE_TEXT_TOKENS = 512;

    static CrossContext split(Backend backend, Tensor image, Tensor text) {
      if (image == null) {
        return new CrossContext(text, null);
      }
      Tensor all = backend.concat(List.of(inDType(backend, image, text.dtype()), text), 1);
      int total = all.dim(1);
      int imageTokens =
          total >= REFERENCE_TEXT_TOKENS
              ? total - REFERENCE_TEXT_TOKENS
              : Math.max(0, 2 * total - REFERENCE_TEXT_TOKENS);
      return new CrossContext(
          backend.contiguous(all.slice(1, imageTokens, total)),
          imageTokens == 0 ? null : backend.contiguous(all.slice(1, 0, imageTokens)));
    }
  }

  /** One forward's inputs (image null without image conditioning). */
  private record Inputs(Tensor latents, Tensor timestep, Tensor text, Tensor image) {}

  /**
   * Every linear layer an adapter may target, by its checkpoint name ({@code blocks.0.attn1.to_q},
   * {@code condition_embedder.time_proj}, {@code proj_out}), with its widths.
   */
  public java.util.Map<String, LinearShape> adaptableLayers() {
    java.util.Map<String, Linear> all = new java.util.LinkedHashMap<>();
    conditions.collectLayers(all);
    for (WanTransformerBlock b : blocks) {
      b.collectLayers(all);
    }
    all.put(projOut.name(), projOut);
    java.util.Map<String, LinearShape> out = new java.util.LinkedHashMap<>();
    all.forEach((name, l) -> out.put(name, new LinearShape(l.in(), l.out())));
    return java.util.Collections.unmodifiableMap(out);
  }

  private Tensor run(Inputs in, TapSink taps, BlockHooks hooks, AdapterRows adapters) {
    Tensor hiddenStates = in.latents();
    int batch = hiddenStates.dim(0);
    WanTransformerConfig.PatchSize p = cfg.patchSize();
    int frames = hiddenStates.dim(2) / p.t();
    int height = hiddenStates.dim(3) / p.h();
    int width = hiddenStates.dim(4) / p.w();
    int tokens = frames * height * width;
    int dim = cfg.innerDim();

    // Device work from the per-axis tables uploaded at load: the forward touches the host nowhere,
    // so a backend can record it as a graph (Backend#replayable). The grid tables are rebuilt on
    // every call rather than cached: a recording reads them, so they must live as long as it.
    RotaryTables rope = rotary.forGrid(backend, frames, height, width);
    if (taps.enabled()) {
      taps.tap("rope_cos", RotaryTables.pairRepeated(backend, rope.cos()));
      taps.tap("rope_sin", RotaryTables.pairRepeated(backend, rope.sin()));
    }

    Tensor patches = backend.conv3d(hiddenStates, patchWeight, patchBias, p.toArray(), new int[3]);
    taps.tap("patch_embedding", patches);
    // [B, dim, F', H', W'] -> [B, L, dim] as a strided view, made a dense residual stream by the
    // conversion to the activation dtype or else by the first residual update.
    Tensor x = inActivations(patches.reshape(batch, dim, tokens).transpose(1, 2));

    ConditionEmbedder.Conditions c =
        conditions.apply(backend, in.timestep(), in.text(), in.image(), adapters);
    taps.tap("temb", c.temb());
    taps.tap("timestep_proj", c.timestepProj());
    taps.tap("context", c.context());
    if (c.imageContext() != null) {
      taps.tap("image_context", c.imageContext());
    }

    // The embeddings as [B, T, ...]: T = 1 (one timestep per sample, broadcast over the tokens)
    // or L (one per token).
    Tensor temb = in.timestep().rank() == 1 ? c.temb().unsqueeze(1) : c.temb();
    Tensor timestepProj = c.timestepProj().reshape(batch, temb.dim(1), 6, dim);
    // The blocks' cross-attention keys and values come from the text and image contexts: in the
    // activation dtype, so each block projects them without converting them first.
    CrossContext cross = CrossContext.split(backend, c.imageContext(), inActivations(c.context()));
    Tensor context = cross.text();
    Tensor imageContext = cross.image();
    BlockHooks.BlockRunner runner =
        (from, to, h) ->
            backend.chain(
                h,
                from,
                to,
                (i, hi) -> {
                  Tensor out =
                      blocks[i].apply(
                          backend, hi, context, imageContext, timestepProj, rope, adapters);
                  taps.tap("block_" + i, out);
                  return out;
                });
    x =
        hooks == BlockHooks.NONE
            ? runner.run(0, blocks.length, x)
            : hooks.runBlocks(x, runner, blocks.length);

    Tensor[] shiftScale = Modulation.vectors(backend, outputScaleShiftTable, temb.unsqueeze(2));
    x = backend.modulatedLayerNorm(x, shiftScale[0], shiftScale[1], (float) cfg.eps());
    Tensor out = unpatchify(projOut.apply(backend, x, adapters), batch, frames, height, width);
    return out.dtype() == DType.F32 ? out : backend.upload(out, DType.F32);
  }

  private Tensor inActivations(Tensor t) {
    return inDType(backend, t, backend.activationDType());
  }

  private static Tensor inDType(Backend backend, Tensor t, DType dtype) {
    return t.dtype() == dtype ? t : backend.upload(t, dtype);
  }

  /** {@code [B, L, pt·ph·pw·C]} (patch-major, channel last) to {@code [B, C, F, H, W]}. */
  private Tensor unpatchify(Tensor patches, int batch, int frames, int height, int width) {
    WanTransformerConfig.PatchSize p = cfg.patchSize();
    int channels = cfg.outChannels();
    Tensor grid =
        patches
            .reshape(batch, frames, height, width, p.t(), p.h(), p.w(), channels)
            .permute(0, 7, 1, 4, 2, 5, 3, 6);
    return backend
        .contiguous(grid)
        .reshape(batch, channels, frames * p.t(), height * p.h(), width * p.w());
  }

  private void checkInputs(Inputs in) {
    int[] hs = in.latents().shape();
    WanTransformerConfig.PatchSize p = cfg.patchSize();
    if (hs.length != 5
        || hs[1] != cfg.inChannels()
        || hs[2] % p.t() != 0
        || hs[3] % p.h() != 0
        || hs[4] % p.w() != 0) {
      throw new IllegalArgumentException(
          "hidden_states "
              + Arrays.toString(hs)
              + " must be [B, "
              + cfg.inChannels()
              + ", F, H, W] with F, H, W divisible by patch_size "
              + Arrays.toString(p.toArray()));
    }
    int batch = hs[0];
    int tokens = hs[2] / p.t() * (hs[3] / p.h()) * (hs[4] / p.w());
    int[] ts = in.timestep().shape();
    boolean perSample = ts.length == 1 && ts[0] == batch;
    boolean perToken = ts.length == 2 && ts[0] == batch && ts[1] == tokens;
    if (!(perSample || perToken) || !in.timestep().dtype().isFloating()) {
      throw new IllegalArgumentException(
          "timestep "
              + in.timestep().dtype()
              + Arrays.toString(ts)
              + " must be float ["
              + batch
              + "] (one per sample) or ["
              + batch
              + ", "
              + tokens
              + "] (one per token)");
    }
    int[] es = in.text().shape();
    if (es.length != 3 || es[0] != batch || es[2] != cfg.textDim()) {
      throw new IllegalArgumentException(
          "encoder_hidden_states "
              + Arrays.toString(es)
              + " must be ["
              + batch
              + ", S, "
              + cfg.textDim()
              + "]");
    }
    checkImageStates(in.image(), batch);
  }

  private void checkImageStates(Tensor image, int batch) {
    WanTransformerConfig.ImageConditioning conditioning = cfg.image();
    if (conditioning == null) {
      if (image != null) {
        throw new IllegalArgumentException(
            "encoder_hidden_states_image "
                + Arrays.toString(image.shape())
                + " given to a transformer without image conditioning (no image_dim)");
      }
      return;
    }
    if (image == null) {
      throw new IllegalArgumentException(
          "encoder_hidden_states_image is required: the transformer is image-conditioned"
              + " (image_dim "
              + conditioning.imageDim()
              + ")");
    }
    int[] is = image.shape();
    int width = conditioning.imageDim();
    Integer positions = conditioning.posEmbedSeqLen();
    boolean fits =
        is.length == 3
            && is[2] == width
            && (positions == null
                ? is[0] == batch
                : (is[0] == batch && is[1] == positions)
                    || (is[0] == 2 * batch && 2 * is[1] == positions));
    if (!fits) {
      String expected =
          positions == null
              ? "[" + batch + ", S, " + width + "]"
              : "["
                  + batch
                  + ", "
                  + positions
                  + ", "
                  + width
                  + "] or ["
                  + 2 * batch
                  + ", "
                  + positions / 2
                  + ", "
                  + width
                  + "] (pos_embed_seq_len "
                  + positions
                  + ")";
      throw new IllegalArgumentException(
          "encoder_hidden_states_image " + Arrays.toString(is) + " must be " + expected);
    }
  }
}
