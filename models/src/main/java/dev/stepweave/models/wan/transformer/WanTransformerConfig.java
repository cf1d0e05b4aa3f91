package dev.stepweave.models.wan.transformer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The text-to-video configuration of diffusers' {@code WanTransformer3DModel}, as stored in the
 * transformer component's config.json. Image conditioning (I2V: {@code image_dim}, {@code
 * added_kv_proj_dim}) is not supported yet and is rejected rather than silently ignored.
 */
public record WanTransformerConfig(
    int numAttentionHeads,
    int attentionHeadDim,
    int inChannels,
    int outChannels,
    int textDim,
    int freqDim,
    int ffnDim,
    int numLayers,
    PatchSize patchSize,
    boolean crossAttnNorm,
    String qkNorm,
    double eps,
    int ropeMaxSeqLen) {

  /** The only query/key normalisation Wan checkpoints use: one RMSNorm over all heads. */
  public static final String QK_NORM_ACROSS_HEADS = "rms_norm_across_heads";

  /** Kernel and stride of the patch-embedding convolution, per axis. */
  public record PatchSize(int t, int h, int w) {
    public int volume() {
      return t * h * w;
    }

    public int[] toArray() {
      return new int[] {t, h, w};
    }
  }

  public WanTransformerConfig {
    requirePositive("num_attention_heads", numAttentionHeads);
    requirePositive("attention_head_dim", attentionHeadDim);
    requirePositive("in_channels", inChannels);
    requirePositive("out_channels", outChannels);
    requirePositive("text_dim", textDim);
    requirePositive("freq_dim", freqDim);
    requirePositive("ffn_dim", ffnDim);
    requirePositive("num_layers", numLayers);
    requirePositive("patch_size[0]", patchSize.t());
    requirePositive("patch_size[1]", patchSize.h());
    requirePositive("patch_size[2]", patchSize.w());
    requirePositive("rope_max_seq_len", ropeMaxSeqLen);
    // RoPE splits each head into three axis bands of interleaved pairs.
    if (attentionHeadDim % 2 != 0) {
      throw new IllegalArgumentException(
          "attention_head_dim " + attentionHeadDim + " must be even for rotary embeddings");
    }
    if (!QK_NORM_ACROSS_HEADS.equals(qkNorm)) {
      throw new IllegalArgumentException(
          "qk_norm '" + qkNorm + "' is not supported (only '" + QK_NORM_ACROSS_HEADS + "')");
    }
    if (!(eps > 0)) {
      throw new IllegalArgumentException("eps must be positive, got " + eps);
    }
  }

  /** Width of the residual stream: heads × head dim. */
  public int innerDim() {
    return numAttentionHeads * attentionHeadDim;
  }

  /**
   * Parses a config.json tree.
   *
   * @throws IllegalArgumentException naming the first missing, malformed or unsupported entry
   */
  public static WanTransformerConfig fromJson(JsonNode json) {
    requireNull(json, "image_dim", "image-to-video (image_dim) is not supported yet");
    requireNull(
        json, "added_kv_proj_dim", "image-to-video (added_kv_proj_dim) is not supported yet");
    requireNull(
        json,
        "pos_embed_seq_len",
        "a learned image-token position embedding (pos_embed_seq_len) is not supported yet");
    JsonNode patch = required(json, "patch_size");
    if (!patch.isArray() || patch.size() != 3) {
      throw new IllegalArgumentException("patch_size must be an array of 3 integers, got " + patch);
    }
    int inChannels = intValue(json, "in_channels");
    JsonNode out = json.get("out_channels");
    // diffusers falls back to in_channels when out_channels is null.
    int outChannels = out == null || out.isNull() ? inChannels : intValue(json, "out_channels");
    JsonNode qkNorm = required(json, "qk_norm");
    return new WanTransformerConfig(
        intValue(json, "num_attention_heads"),
        intValue(json, "attention_head_dim"),
        inChannels,
        outChannels,
        intValue(json, "text_dim"),
        intValue(json, "freq_dim"),
        intValue(json, "ffn_dim"),
        intValue(json, "num_layers"),
        new PatchSize(patchEntry(patch, 0), patchEntry(patch, 1), patchEntry(patch, 2)),
        booleanValue(json, "cross_attn_norm"),
        qkNorm.isNull() ? null : qkNorm.asText(),
        doubleValue(json, "eps"),
        intValue(json, "rope_max_seq_len"));
  }

  /**
   * Reads and parses a config.json file.
   *
   * @throws CheckpointException naming the file and what is wrong in it
   */
  public static WanTransformerConfig read(Path configJson) {
    JsonNode json;
    try {
      json = new ObjectMapper().readTree(configJson.toFile());
    } catch (IOException e) {
      throw new CheckpointException(configJson + ": cannot read transformer config: " + e, e);
    }
    try {
      return fromJson(json);
    } catch (IllegalArgumentException e) {
      throw new CheckpointException(configJson + ": " + e.getMessage(), e);
    }
  }

  private static JsonNode required(JsonNode json, String key) {
    JsonNode v = json.get(key);
    if (v == null) {
      throw new IllegalArgumentException("missing '" + key + "'");
    }
    return v;
  }

  private static int intValue(JsonNode json, String key) {
    JsonNode v = required(json, key);
    if (!v.canConvertToInt() || !v.isIntegralNumber()) {
      throw new IllegalArgumentException("'" + key + "' must be an integer, got " + v);
    }
    return v.intValue();
  }

  private static int patchEntry(JsonNode patch, int i) {
    JsonNode v = patch.get(i);
    if (!v.isIntegralNumber() || !v.canConvertToInt()) {
      throw new IllegalArgumentException("patch_size must be an array of 3 integers, got " + patch);
    }
    return v.intValue();
  }

  private static double doubleValue(JsonNode json, String key) {
    JsonNode v = required(json, key);
    if (!v.isNumber()) {
      throw new IllegalArgumentException("'" + key + "' must be a number, got " + v);
    }
    return v.doubleValue();
  }

  private static boolean booleanValue(JsonNode json, String key) {
    JsonNode v = required(json, key);
    if (!v.isBoolean()) {
      throw new IllegalArgumentException("'" + key + "' must be true or false, got " + v);
    }
    return v.booleanValue();
  }

  private static void requireNull(JsonNode json, String key, String message) {
    JsonNode v = json.get(key);
    if (v != null && !v.isNull()) {
      throw new IllegalArgumentException(message + ": '" + key + "' is " + v);
    }
  }

  private static void requirePositive(String key, int value) {
    if (value <= 0) {
      throw new IllegalArgumentException("'" + key + "' must be positive, got " + value);
    }
  }
}
