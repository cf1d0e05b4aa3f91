package dev.stepweave.models.text;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The UMT5 encoder's {@code config.json}: every dimension the weights must have.
 *
 * @param dModel hidden size
 * @param dKv size of one attention head (heads × dKv need not equal dModel)
 * @param dFf inner size of the feed-forward block
 * @param relativeAttentionNumBuckets buckets of the relative position bias, both directions
 *     together
 * @param relativeAttentionMaxDistance distance from which all positions share the last bucket
 * @param tieWordEmbeddings whether the output head shares the embedding (no effect on the encoder)
 */
public record UMT5Config(
    int dModel,
    int dKv,
    int dFf,
    int numHeads,
    int numLayers,
    int relativeAttentionNumBuckets,
    int relativeAttentionMaxDistance,
    float layerNormEpsilon,
    int vocabSize,
    boolean tieWordEmbeddings) {

  /** The only feed-forward the encoder implements: {@code gelu_tanh(x·wi_0) * (x·wi_1)}. */
  private static final String GATED = "gated";

  private static final String TANH_GELU = "gelu_new";

  /** Reads {@code config.json}. */
  public static UMT5Config read(Path configJson) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(configJson.toFile());
    } catch (IOException e) {
      throw new CheckpointException(configJson + ": cannot read (" + e.getMessage() + ")", e);
    }
    return fromJson(root, configJson.toString());
  }

  /**
   * Parses a config object.
   *
   * @param where what to name in errors (normally the file)
   */
  public static UMT5Config fromJson(JsonNode root, String where) {
    if (root == null || !root.isObject()) {
      throw new CheckpointException(where + ": expected a JSON object");
    }
    requireTanhGatedGelu(root, where);
    return new UMT5Config(
        positiveInt(root, "d_model", where),
        positiveInt(root, "d_kv", where),
        positiveInt(root, "d_ff", where),
        positiveInt(root, "num_heads", where),
        positiveInt(root, "num_layers", where),
        positiveInt(root, "relative_attention_num_buckets", where),
        positiveInt(root, "relative_attention_max_distance", where),
        (float) root.path("layer_norm_epsilon").asDouble(1e-6),
        positiveInt(root, "vocab_size", where),
        root.path("tie_word_embeddings").asBoolean(true));
  }

  /** Width of the concatenated attention heads. */
  public int innerDim() {
    return numHeads * dKv;
  }

  /**
   * transformers derives the activation from {@code feed_forward_proj} ("gated-gelu" means the tanh
   * GELU) and ignores a stored {@code dense_act_fn}; so does this.
   */
  private static void requireTanhGatedGelu(JsonNode root, String where) {
    String proj = root.path("feed_forward_proj").asText("relu");
    int dash = proj.lastIndexOf('-');
    String gate = dash < 0 ? "" : proj.substring(0, dash);
    String act = proj.substring(dash + 1);
    if ("gelu".equals(act)) {
      act = TANH_GELU;
    }
    if (!GATED.equals(gate) || !TANH_GELU.equals(act)) {
      throw new CheckpointException(
          where
              + ": feed_forward_proj '"
              + proj
              + "' is not supported (only gated-gelu, the tanh-approximated GELU)");
    }
  }

  private static int positiveInt(JsonNode root, String key, String where) {
    JsonNode v = root.get(key);
    if (v == null || !v.canConvertToInt() || !v.isIntegralNumber() || v.intValue() <= 0) {
      throw new CheckpointException(
          where + ": '" + key + "' must be a positive integer, got " + (v == null ? "nothing" : v));
    }
    return v.intValue();
  }
}
