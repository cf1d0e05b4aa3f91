package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.Arrays;
import java.util.Map;

/**
 * The Wan video VAE (diffusers {@code AutoencoderKLWan}): a causal 3-D convolutional encoder and
 * decoder that compress video in space ({@link WanVaeConfig#spatialCompression}) and 4× in time
 * (after the first frame) into {@code z_dim} channels. The Wan 2.1 VAE compresses 8× in space; the
 * Wan 2.2 one ({@code is_residual}) first folds 2×2 pixel patches into channels, bypasses each
 * resampling stage with a shortcut that folds (encoder) or repeats (decoder) cells, and compresses
 * 16×. One implementation serves both: the config says which blocks load.
 *
 * <p>Both directions run in temporal chunks, as the reference does, each causal convolution
 * remembering the last frames of the previous chunk; the chunking changes the numbers, so it is
 * part of the model. All per-call state lives in an {@link EncodeState} or {@link DecodeState}: the
 * loaded model is immutable and serves concurrent calls, and a call can stop after any chunk and
 * continue later. Decoding can also split each frame into spatial tiles, exactly (see {@link
 * WanVaeDecoder#haloCells}): tiles bound the memory of the high-resolution layers, not the result.
 */
public final class WanVae {
  private static final float LOGVAR_MIN = -30f;
  private static final float LOGVAR_MAX = 20f;

  private final WanVaeConfig config;
  private final Backend backend;
  private final CausalStack encoder;
  private final CausalConv3d quantConv;
  private final CausalConv3d postQuantConv;
  private final WanVaeDecoder decoder;
  private final ConvolutionPrecision precision;
  private final PixelPatches patches;
  private final Tensor latentsMean;
  private final Tensor latentsInverseStd;

  private WanVae(
      WanVaeConfig config,
      Backend backend,
      CausalStack encoder,
      CausalConv3d quantConv,
      CausalConv3d postQuantConv,
      WanVaeDecoder decoder,
      ConvolutionPrecision precision) {
    this.config = config;
    this.precision = precision;
    this.backend = backend;
    this.encoder = encoder;
    this.quantConv = quantConv;
    this.postQuantConv = postQuantConv;
    this.decoder = decoder;
    this.patches = new PixelPatches(backend, config.patch());
    int z = config.zDim();
    float[] mean = new float[z];
    float[] inverseStd = new float[z];
    for (int c = 0; c < z; c++) {
      mean[c] = config.latentsMean().get(c).floatValue();
      // The pipeline stores 1/std in float32 and divides by it; keep that rounding.
      inverseStd[c] = 1f / config.latentsStd().get(c).floatValue();
    }
    this.latentsMean = backend.upload(Tensor.of(mean, 1, z, 1, 1, 1), DType.F32);
    this.latentsInverseStd = backend.upload(Tensor.of(inverseStd, 1, z, 1, 1, 1), DType.F32);
  }

  /**
   * Loads every tensor by its diffusers name with the shape {@code config} implies and fails on any
   * tensor left over.
   *
   * @throws dev.stepweave.tensor.io.CheckpointException naming the file and tensor on a mismatch
   */
  public static WanVae load(WanVaeConfig config, Weights weights) {
    return load(config, weights, ConvolutionPrecision.of(weights.backend(), config));
  }

  /** {@link #load} with its convolutions' precision given. */
  static WanVae load(WanVaeConfig config, Weights weights, ConvolutionPrecision precision) {
    int z = config.zDim();
    WanVae vae =
        new WanVae(
            config,
            weights.backend(),
            WanVaeEncoder.load(config, weights.scope("encoder"), precision),
            CausalConv3d.cube(weights.scope("quant_conv"), 2 * z, 2 * z, 1, precision),
            CausalConv3d.cube(weights.scope("post_quant_conv"), z, z, 1, precision),
            WanVaeDecoder.load(config, weights.scope("decoder"), precision),
            precision);
    weights.finish();
    return vae;
  }

  public WanVaeConfig config() {
    return config;
  }

  /**
   * What the VAE computes in: BF16 when its convolutions read BF16 operands (a residual VAE in the
   * performance mode; its stream stays F32), else F32 — F32 data, whose products cuDNN computes in
   * TF32 in the performance mode.
   */
  public Precision precision() {
    return precision == ConvolutionPrecision.BF16_OPERANDS ? Precision.BF16 : Precision.F32;
  }

  // ---- encode ---------------------------------------------------------------------------------

  /**
   * Begins encoding {@code video [B, C, T, H, W]} ({@link WanVaeConfig#videoInChannels} channels)
   * with values in {@code [-1, 1]}; its pixel patches are folded into channels here, once.
   */
  public EncodeState startEncode(Tensor video) {
    requireChannels("video", video, config.videoInChannels());
    return new EncodeState(
        patches.fold(video), new CausalCache(encoder.cacheSlots()), backend.stepMemory());
  }

  /**
   * Encodes the next temporal chunk.
   *
   * @return whether chunks remain
   */
  public boolean step(EncodeState state) {
    if (state.isDone()) {
      throw new IllegalStateException(
          "encode already processed all " + state.chunkCount() + " chunks");
    }
    state.step(
        () -> {
          Tensor moments = encoder.apply(state.nextFrames(), state.cache());
          state.accept(quantConv.apply(moments, null));
        });
    return !state.isDone();
  }

  /** The raw posterior of a finished encode. */
  public Posterior finish(EncodeState state) {
    if (!state.isDone()) {
      throw new IllegalStateException(
          "encode finished after " + state.nextChunk() + " of " + state.chunkCount() + " chunks");
    }
    Tensor moments = Frames.concat(backend, state.encoded());
    int z = config.zDim();
    Tensor logvar = backend.clamp(moments.slice(1, z, 2 * z), LOGVAR_MIN, LOGVAR_MAX);
    return new Posterior(backend.contiguous(moments.slice(1, 0, z)), logvar);
  }

  /** Encodes a whole video: the raw posterior mean and log-variance. */
  public Posterior encode(Tensor video) {
    EncodeState state = startEncode(video);
    while (step(state)) {
      // one chunk per step
    }
    return finish(state);
  }

  // ---- decode ---------------------------------------------------------------------------------

  /** Begins an untiled decode of raw latents {@code z [B, z_dim, T', H', W']}. */
  public DecodeState startDecode(Tensor latents) {
    return startDecode(latents, null);
  }

  /**
   * Begins decoding raw latents {@code z [B, z_dim, T', H', W']} (see {@link #denormalize}) in
   * spatial tiles, or untiled when {@code tiling} is null. Tiling changes memory, not the result.
   */
  public DecodeState startDecode(Tensor latents, DecodeTiling tiling) {
    TileGrid grid = tileGrid(latents, tiling);
    CausalCache[] tileCaches = new CausalCache[grid.size()];
    for (int i = 0; i < tileCaches.length; i++) {
      tileCaches[i] = new CausalCache(decoder.cacheSlots());
    }
    return new DecodeState(
        latents, grid, new CausalCache(decoder.cacheSlots()), tileCaches, backend.stepMemory());
  }

  /**
   * Decodes the next tile of the current latent frame (one frame for the first, {@code temporal
   * compression} after), first running the frame's global part when the tile is its first.
   *
   * @return whether steps remain
   */
  public boolean step(DecodeState state) {
    if (state.isDone()) {
      throw new IllegalStateException("decode already processed all latent frames");
    }
    state.step(
        () -> {
          if (state.features() == null) {
            Tensor x = postQuantConv.apply(state.nextLatentFrame(), null);
            state.beginFrame(decoder.global(x, state.globalCache()));
          }
          DecodeTile tile = state.nextTile();
          Tensor video =
              patches.unfold(decoder.local(tile.inputOf(state.features()), state.nextTileCache()));
          // A copy, so the halo's pixels are not retained with the tile.
          state.acceptTile(
              backend.contiguous(tile.outputOf(video, config.spatialCompression())), backend);
        });
    return !state.isDone();
  }

  /**
   * The decode after its next step: a loop's step computes the next state and its loop adopts it.
   * {@code state} keeps its lists and counters but is spent (see {@link DecodeState#fork}): on a
   * device backend the step frees the cache frames it replaces as it goes, so a step that throws
   * leaves no state to retry from. Its request fails then, or is rewound to a host checkpoint; the
   * engine re-runs only batchable calls, which a decode step is not.
   */
  public DecodeState stepped(DecodeState state) {
    DecodeState next = state.fork();
    step(next);
    return next;
  }

  /**
   * The video of a finished decode, {@code [B, C, T, H, W]} ({@link WanVaeConfig#videoOutChannels}
   * channels) clamped to [-1, 1].
   */
  public Tensor finish(DecodeState state) {
    if (!state.isDone()) {
      throw new IllegalStateException(
          "decode finished after " + state.stepsDone() + " of " + state.totalSteps() + " steps");
    }
    return backend.scoped(() -> backend.clamp(Frames.concat(backend, state.decoded()), -1f, 1f));
  }

  /**
   * Continues a decode from {@link DecodeState#tensors} and {@link DecodeState#scalars} (tensors
   * already on this VAE's backend) over the same latents and tiling.
   */
  public DecodeState restoreDecode(
      Tensor latents,
      DecodeTiling tiling,
      Map<String, Tensor> tensors,
      Map<String, String> scalars) {
    return DecodeState.restore(
        latents,
        tileGrid(latents, tiling),
        decoder.cacheSlots(),
        tensors,
        scalars,
        backend.stepMemory());
  }

  /** Decodes raw latents into video clamped to [-1, 1]. */
  public Tensor decode(Tensor latents) {
    return decodeTiled(latents, null);
  }

  /**
   * Decodes raw latents tile by tile over height and width (untiled when {@code tiling} is null):
   * the same video as {@link #decode}, with the high-resolution activations bounded by the tile.
   */
  public Tensor decodeTiled(Tensor latents, DecodeTiling tiling) {
    DecodeState state = startDecode(latents, tiling);
    while (step(state)) {
      // one tile of one latent frame per step
    }
    Tensor video = finish(state);
    state.release();
    return video;
  }

  private TileGrid tileGrid(Tensor latents, DecodeTiling tiling) {
    requireChannels("latents", latents, config.zDim());
    return TileGrid.plan(
        latents.dim(3),
        latents.dim(4),
        tiling,
        config.spatialCompression(),
        WanVaeDecoder.haloCells(config));
  }

  // ---- latent normalisation -------------------------------------------------------------------

  /** Raw posterior latents → the normalised space the transformer works in. */
  public Tensor normalize(Tensor latents) {
    return backend.mul(backend.sub(latents, latentsMean), latentsInverseStd);
  }

  /** Normalised latents → raw latents for {@link #decode}, as WanPipeline computes it. */
  public Tensor denormalize(Tensor latents) {
    return backend.add(backend.div(latents, latentsInverseStd), latentsMean);
  }

  private static void requireChannels(String what, Tensor x, int channels) {
    if (x.rank() != 5 || x.dim(1) != channels) {
      throw new IllegalArgumentException(
          what
              + " must be [B, "
              + channels
              + ", T, H, W] but has shape "
              + Arrays.toString(x.shape()));
    }
  }
}
