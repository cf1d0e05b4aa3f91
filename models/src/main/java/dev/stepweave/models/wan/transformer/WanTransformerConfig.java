package dev.stepweave.models.wan.transformer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * The configuration of diffusers' {@code WanTransformer3DModel}, as stored in the transformer
 * component's config.json: text-to-video (Wan2.1 T2V, Wan2.2 T2V and TI2V — the per-token timesteps
 * of TI2V need no field here), and image-to-video with image tokens ({@code image_dim}, {@code
 * added_kv_proj_dim}, optionally {@code pos_embed_seq_len}: Wan2.1 I2V and FLF2V).
 *
 * @param image the image-token conditioning, or null for a model without image tokens
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
    int ropeMaxSeqLen,
    ImageConditioning image) {

  /** The only query/key normalisation Wan checkpoints use: one RMSNorm over all heads. */
  public static final String QK_NORM_ACROSS_HEADS = "rms_norm_across_heads";

  /** Every config field {@link #fromJson} reads. */
  private static final Set<String> FIELDS =
      Set.of(
          "patch_size",
          "num_attention_heads",
          "attention_head_dim",
          "in_channels",
          "out_channels",
          "text_dim",
          "freq_dim",
          "ffn_dim",
          "num_layers",
          "cross_attn_norm",
          "qk_norm",
          "eps",
          "rope_max_seq_len",
          "image_dim",
          "added_kv_proj_dim",
          "pos_embed_seq_len");

  /** Kernel and stride of the patch-embedding convolution, per axis. */
  public record PatchSize(int t, int h, int w) {
    public int volume() {
      return t * h * w;
    }

    public int[] toArray() {
      return new int[] {t, h, w};
    }
  }

  /**
   * Image tokens (CLIP vision states) embedded to the model's width and cross-attended through the
   * extra key/value projections {@code add_k_proj}/{@code add_v_proj} of every block.
   *
   * @param imageDim {@code image_dim}: the width of the image-encoder states
   * @param addedKvProjDim {@code added_kv_proj_dim}: the input width of {@code add_k_proj} and
   *     {@code add_v_proj}, which read the embedded image tokens, so it is the inner width
   * @param posEmbedSeqLen {@code pos_embed_seq_len}: the length of a learned position embedding
   *     added to each sample's image tokens (FLF2V: two images' tokens), or null for none
   */
  public record ImageConditioning(int imageDim, int addedKvProjDim, Integer posEmbedSeqLen) {}

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
    if (image != null) {
      requirePositive("image_dim", image.imageDim());
      if (image.addedKvProjDim() != numAttentionHeads * attentionHeadDim) {
        throw new IllegalArgumentException(
            "'added_kv_proj_dim' "
                + image.addedKvProjDim()
                + " must be the inner width num_attention_heads * attention_head_dim = "
                + numAttentionHeads * attentionHeadDim
                + " (add_k_proj and add_v_proj read the embedded image tokens)");
      }
      if (image.posEmbedSeqLen() != null) {
        requirePositive("pos_embed_seq_len", image.posEmbedSeqLen());
      }
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
    for (Iterator<Map.Entry<String, JsonNode>> it = json.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> field = it.next();
      // Underscored entries are diffusers' bookkeeping (class, version), not model settings.
      if (!field.getKey().startsWith("_") && !FIELDS.contains(field.getKey())) {
        throw new IllegalArgumentException(
            "field '"
                + field.getKey()
                + "' ("
                + field.getValue()
                + ") is not a WanTransformer3DModel setting this runtime implements");
      }
    }
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
        intValue(json, "rope_max_seq_len"),
        imageConditioning(json));
  }

  /**
   * The image conditioning, or null. Only the combination the reference runs as image-to-video is
   * accepted: diffusers would attend image tokens through the text projections without {@code
   * added_kv_proj_dim}, split unembedded tokens off the text without {@code image_dim}, and ignore
   * {@code pos_embed_seq_len} without an image embedder.
   */
  private static ImageConditioning imageConditioning(JsonNode json) {
    Integer imageDim = nullableInt(json, "image_dim");
    Integer addedKv = nullableInt(json, "added_kv_proj_dim");
    Integer posEmbed = nullableInt(json, "pos_embed_seq_len");
    if (imageDim == null && addedKv == null) {
      if (posEmbed != null) {
        throw new IllegalArgumentException(
            "'pos_embed_seq_len' is " + posEmbed + " but there is no image_dim to embed");
      }
      return null;
    }
    if (imageDim == null || addedKv == null) {
      String present = imageDim == null ? "added_kv_proj_dim" : "image_dim";
      String absent = imageDim == null ? "image_dim" : "added_kv_proj_dim";
      throw new IllegalArgumentException(
          "'"
              + present
              + "' without '"
              + absent
              + "' is not supported: image tokens need both the image embedder and the added"
              + " key/value projections");
    }
    return new ImageConditioning(imageDim, addedKv, posEmbed);
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

  private static Integer nullableInt(JsonNode json, String key) {
    JsonNode v = json.get(key);
    return v == null || v.isNull() ? null : intValue(json, key);
  }

  private static void requirePositive(String key, int value) {
    if (value <= 0) {
      throw new IllegalArgumentException("'" + key + "' must be positive, got " + value);
    }
  }
}
