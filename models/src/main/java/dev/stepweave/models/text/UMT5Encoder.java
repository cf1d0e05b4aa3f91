package dev.stepweave.models.text;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The UMT5 encoder stack (transformers' {@code UMT5EncoderModel}): token embedding, {@code
 * num_layers} pre-norm blocks with per-layer relative position bias, final RMS norm. Its output is
 * {@code last_hidden_state}.
 *
 * <p>transformers clamps hidden states to the float16 range between sub-layers only when they are
 * float16; this encoder computes in the backend's float precision and has no such step.
 */
public final class UMT5Encoder {
  private static final String EMBEDDING = "shared.weight";
  private static final String TIED_EMBEDDING = "encoder.embed_tokens.weight";

  /**
   * Additive bias for padded keys. Far below any real logit, yet finite in every float format, so a
   * backend computing in bf16 cannot turn it into -inf and a NaN.
   */
  private static final float MASKED = -1e30f;

  private final UMT5Config config;
  private final Backend backend;
  private final Tensor embedding;
  private final List<UMT5Block> blocks;
  private final Tensor finalNorm;
  private final RelativePositionBuckets buckets;

  private UMT5Encoder(
      UMT5Config config,
      Backend backend,
      Tensor embedding,
      List<UMT5Block> blocks,
      Tensor finalNorm) {
    this.config = config;
    this.backend = backend;
    this.embedding = embedding;
    this.blocks = List.copyOf(blocks);
    this.finalNorm = finalNorm;
    this.buckets =
        new RelativePositionBuckets(
            config.relativeAttentionNumBuckets(), config.relativeAttentionMaxDistance());
  }

  /**
   * Loads every tensor the config implies and fails on any other. The embedding is {@code
   * shared.weight}; checkpoints may also store it as {@code encoder.embed_tokens.weight} (tied),
   * and either alone is accepted.
   */
  public static UMT5Encoder load(UMT5Config config, Weights weights) {
    Tensor embedding = loadEmbedding(config, weights);
    Weights encoder = weights.scope("encoder");
    List<UMT5Block> blocks = new ArrayList<>(config.numLayers());
    for (int i = 0; i < config.numLayers(); i++) {
      blocks.add(UMT5Block.load(config, encoder.scope("block." + i)));
    }
    Tensor finalNorm = encoder.take("final_layer_norm.weight", config.dModel());
    weights.finish();
    return new UMT5Encoder(config, weights.backend(), embedding, blocks, finalNorm);
  }

  private static Tensor loadEmbedding(UMT5Config config, Weights weights) {
    String stored =
        weights.has(EMBEDDING) || !weights.has(TIED_EMBEDDING) ? EMBEDDING : TIED_EMBEDDING;
    Tensor table = weights.take(stored, config.vocabSize(), config.dModel());
    weights.ignore(TIED_EMBEDDING);
    return table;
  }

  public UMT5Config config() {
    return config;
  }

  /** Where the weights live and the encoder computes. */
  public Backend backend() {
    return backend;
  }

  /**
   * @param inputIds token ids {@code [B, S]} (integer)
   * @param attentionMask {@code [B, S]}, nonzero for real tokens; null attends to everything
   * @return {@code last_hidden_state} {@code [B, S, d_model]}
   */
  public Tensor encode(Tensor inputIds, Tensor attentionMask) {
    if (inputIds.rank() != 2) {
      throw new IllegalArgumentException(
          "input ids must be [batch, sequence], got " + Arrays.toString(inputIds.shape()));
    }
    int batch = inputIds.dim(0);
    int length = inputIds.dim(1);
    Tensor maskBias = attentionMask == null ? null : maskBias(attentionMask, batch, length);
    Tensor bucketIds = backend.upload(buckets.table(length, length), DType.I64);
    Tensor h = backend.embedding(embedding, backend.upload(inputIds, DType.I64));
    for (UMT5Block block : blocks) {
      h = block.forward(h, bucketIds, maskBias);
    }
    return backend.rmsNorm(h, finalNorm, config.layerNormEpsilon());
  }

  /** {@code [B, 1, 1, S]}: 0 where a key is a real token, {@link #MASKED} where it is padding. */
  private Tensor maskBias(Tensor attentionMask, int batch, int length) {
    if (!Arrays.equals(attentionMask.shape(), new int[] {batch, length})) {
      throw new IllegalArgumentException(
          "attention mask "
              + Arrays.toString(attentionMask.shape())
              + " does not match input ids ["
              + batch
              + ", "
              + length
              + "]");
    }
    Tensor hostMask =
        attentionMask.device().kind() == Device.Kind.CPU
            ? attentionMask
            : backend.download(attentionMask);
    float[] mask = hostMask.toFloatArray();
    float[] bias = new float[mask.length];
    for (int i = 0; i < mask.length; i++) {
      bias[i] = mask[i] != 0 ? 0f : MASKED;
    }
    return backend.upload(Tensor.of(bias, batch, 1, 1, length), DType.F32);
  }
}
