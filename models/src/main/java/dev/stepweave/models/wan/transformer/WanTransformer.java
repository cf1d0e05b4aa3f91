package dev.stepweave.models.wan.transformer;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.Arrays;

/**
 * The Wan 2.1 text-to-video diffusion transformer (diffusers' {@code WanTransformer3DModel}):
 * patchify the latent video, run the blocks conditioned on the timestep and the text, and project
 * back to a latent-shaped prediction. All compute goes through the weights' {@link Backend}.
 *
 * <p>Taps: {@code rope_cos}, {@code rope_sin} ({@code [1, L, 1, headDim]}), {@code
 * patch_embedding}, {@code temb}, {@code timestep_proj}, {@code context}, {@code block_<i>}.
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
   * Predicts the flow (or noise) for a batch of latent videos.
   *
   * @param hiddenStates latents {@code [B, in_channels, F, H, W]}, F/H/W divisible by the patch
   * @param timestep float timesteps {@code [B]}
   * @param encoderHiddenStates text-encoder states {@code [B, S, text_dim]}
   * @return {@code [B, out_channels, F, H, W]}
   */
  public Tensor forward(
      Tensor hiddenStates, Tensor timestep, Tensor encoderHiddenStates, TapSink taps) {
    return forward(hiddenStates, timestep, encoderHiddenStates, taps, BlockHooks.NONE);
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
    checkInputs(hiddenStates, timestep, encoderHiddenStates);
    return hooks == BlockHooks.NONE
        ? backend.scoped(
            () -> run(hiddenStates, timestep, encoderHiddenStates, taps, BlockHooks.NONE, adapters))
        : run(hiddenStates, timestep, encoderHiddenStates, taps, hooks, adapters);
  }

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

  private Tensor run(
      Tensor hiddenStates,
      Tensor timestep,
      Tensor encoderHiddenStates,
      TapSink taps,
      BlockHooks hooks,
      AdapterRows adapters) {
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
    Tensor x = patches.reshape(batch, dim, tokens).transpose(1, 2);
    DType activations = backend.activationDType();
    if (x.dtype() != activations) {
      x = backend.upload(x, activations);
    }

    ConditionEmbedder.Conditions c =
        conditions.apply(backend, timestep, encoderHiddenStates, adapters);
    taps.tap("temb", c.temb());
    taps.tap("timestep_proj", c.timestepProj());
    taps.tap("context", c.context());

    Tensor timestepProj = c.timestepProj().reshape(batch, 6, dim);
    // The blocks' cross-attention keys and values come from the text context: in the activation
    // dtype, so each block projects it without converting it first.
    Tensor context =
        c.context().dtype() == activations ? c.context() : backend.upload(c.context(), activations);
    BlockHooks.BlockRunner runner =
        (from, to, h) ->
            backend.chain(
                h,
                from,
                to,
                (i, hi) -> {
                  Tensor out = blocks[i].apply(backend, hi, context, timestepProj, rope, adapters);
                  taps.tap("block_" + i, out);
                  return out;
                });
    x =
        hooks == BlockHooks.NONE
            ? runner.run(0, blocks.length, x)
            : hooks.runBlocks(x, runner, blocks.length);

    Tensor[] shiftScale = Modulation.vectors(backend, outputScaleShiftTable, c.temb().unsqueeze(1));
    x = backend.modulatedLayerNorm(x, shiftScale[0], shiftScale[1], (float) cfg.eps());
    Tensor out = unpatchify(projOut.apply(backend, x, adapters), batch, frames, height, width);
    return out.dtype() == DType.F32 ? out : backend.upload(out, DType.F32);
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

  private void checkInputs(Tensor hiddenStates, Tensor timestep, Tensor encoderHiddenStates) {
    int[] hs = hiddenStates.shape();
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
    int[] ts = timestep.shape();
    if (ts.length != 1 || ts[0] != hs[0] || !timestep.dtype().isFloating()) {
      throw new IllegalArgumentException(
          "timestep "
              + timestep.dtype()
              + Arrays.toString(ts)
              + " must be float ["
              + hs[0]
              + "] (one per sample)");
    }
    int[] es = encoderHiddenStates.shape();
    if (es.length != 3 || es[0] != hs[0] || es[2] != cfg.textDim()) {
      throw new IllegalArgumentException(
          "encoder_hidden_states "
              + Arrays.toString(es)
              + " must be ["
              + hs[0]
              + ", S, "
              + cfg.textDim()
              + "]");
    }
  }
}
