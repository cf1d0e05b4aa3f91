package dev.stepweave.models.clip;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The CLIP vision tower's {@code config.json} (transformers' {@code CLIPVisionConfig}): every
 * dimension the weights must have. {@code projection_dim} belongs to the projection head, which
 * {@code CLIPVisionModel} does not have, so it is not read.
 *
 * @param hiddenSize width of the residual stream
 * @param intermediateSize inner width of each layer's MLP
 * @param numHiddenLayers encoder layers stored in the checkpoint
 * @param numAttentionHeads heads per self-attention; they split {@code hiddenSize} evenly
 * @param imageSize side of the square input the position embedding was learned for
 * @param patchSize side of one square patch (the patch embedding's kernel and stride)
 * @param numChannels input channels (3 for RGB)
 * @param layerNormEps epsilon of every LayerNorm
 * @param hiddenAct the MLP's activation
 */
public record ClipVisionConfig(
    int hiddenSize,
    int intermediateSize,
    int numHiddenLayers,
    int numAttentionHeads,
    int imageSize,
    int patchSize,
    int numChannels,
    float layerNormEps,
    Activation hiddenAct) {

  private static final String VISION_MODEL_TYPE = "clip_vision_model";
  private static final String FULL_CLIP_MODEL_TYPE = "clip";

  // CLIPVisionConfig's defaults for the keys a saved config may leave out.
  private static final int DEFAULT_CHANNELS = 3;
  private static final double DEFAULT_LAYER_NORM_EPS = 1e-5;
  private static final String DEFAULT_ACTIVATION = "quick_gelu";

  /** The MLP activations the encoder implements, by their transformers names. */
  public enum Activation {
    /** The exact (erf) GELU. */
    GELU("gelu"),
    /** OpenAI CLIP's sigmoid approximation {@code x·σ(1.702x)}. */
    QUICK_GELU("quick_gelu");

    private static final float QUICK_GELU_SLOPE = 1.702f;

    private final String configName;

    Activation(String configName) {
      this.configName = configName;
    }

    public String configName() {
      return configName;
    }

    /** Applies the activation through {@code backend}'s operations. */
    Tensor apply(Backend backend, Tensor x) {
      return switch (this) {
        case GELU -> backend.gelu(x, false);
        case QUICK_GELU ->
            backend.mul(
                x, backend.unary(backend.affine(x, QUICK_GELU_SLOPE, 0f), Backend.UnaryOp.SIGMOID));
      };
    }

    static Activation named(String name, String where) {
      for (Activation a : values()) {
        if (a.configName.equals(name)) {
          return a;
        }
      }
      throw new CheckpointException(
          where + ": hidden_act '" + name + "' is not supported (only gelu and quick_gelu)");
    }
  }

  public ClipVisionConfig {
    if (hiddenSize % numAttentionHeads != 0) {
      throw new IllegalArgumentException(
          "hidden_size "
              + hiddenSize
              + " is not divisible by num_attention_heads "
              + numAttentionHeads);
    }
    if (imageSize % patchSize != 0) {
      throw new IllegalArgumentException(
          "image_size " + imageSize + " is not divisible by patch_size " + patchSize);
    }
  }

  /** Reads {@code config.json}. */
  public static ClipVisionConfig read(Path configJson) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(configJson.toFile());
    } catch (IOException e) {
      throw new CheckpointException(configJson + ": cannot read (" + e.getMessage() + ")", e);
    }
    return fromJson(root, configJson.toString());
  }

  /**
   * Parses a config object: a vision config, or a whole CLIP config whose {@code vision_config} is
   * taken (as transformers does when a vision model loads from one). Dimensions must be present;
   * {@code num_channels}, {@code layer_norm_eps} and {@code hidden_act} take the reference's
   * defaults when absent.
   *
   * @param where what to name in errors (normally the file)
   */
  public static ClipVisionConfig fromJson(JsonNode root, String where) {
    if (root == null || !root.isObject()) {
      throw new CheckpointException(where + ": expected a JSON object");
    }
    String modelType = root.path("model_type").asText(VISION_MODEL_TYPE);
    if (FULL_CLIP_MODEL_TYPE.equals(modelType)) {
      return fromJson(root.get("vision_config"), where + " (vision_config)");
    }
    if (!VISION_MODEL_TYPE.equals(modelType)) {
      throw new CheckpointException(
          where + ": model_type '" + modelType + "' is not a CLIP vision model");
    }
    int hidden = positiveInt(root, "hidden_size", where);
    int heads = positiveInt(root, "num_attention_heads", where);
    if (hidden % heads != 0) {
      throw new CheckpointException(
          where + ": hidden_size " + hidden + " is not divisible by num_attention_heads " + heads);
    }
    int image = positiveInt(root, "image_size", where);
    int patch = positiveInt(root, "patch_size", where);
    if (image % patch != 0) {
      throw new CheckpointException(
          where + ": image_size " + image + " is not divisible by patch_size " + patch);
    }
    JsonNode channels = root.get("num_channels");
    JsonNode eps = root.get("layer_norm_eps");
    if (eps != null && (!eps.isNumber() || !(eps.doubleValue() > 0))) {
      throw new CheckpointException(
          where + ": 'layer_norm_eps' must be a positive number, got " + eps);
    }
    JsonNode act = root.get("hidden_act");
    if (act != null && !act.isTextual()) {
      throw new CheckpointException(where + ": 'hidden_act' must be a string, got " + act);
    }
    return new ClipVisionConfig(
        hidden,
        positiveInt(root, "intermediate_size", where),
        positiveInt(root, "num_hidden_layers", where),
        heads,
        image,
        patch,
        channels == null ? DEFAULT_CHANNELS : positiveInt(root, "num_channels", where),
        (float) (eps == null ? DEFAULT_LAYER_NORM_EPS : eps.doubleValue()),
        Activation.named(act == null ? DEFAULT_ACTIVATION : act.textValue(), where));
  }

  /** Width of one attention head. */
  public int headDim() {
    return hiddenSize / numAttentionHeads;
  }

  /** Patches along one side of the input. */
  public int patchesPerSide() {
    return imageSize / patchSize;
  }

  /** Tokens of one image: the class token, then one per patch in row-major order. */
  public int numPositions() {
    return patchesPerSide() * patchesPerSide() + 1;
  }

  private static int positiveInt(JsonNode root, String key, String where) {
    JsonNode v = root.get(key);
    if (v == null || !v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() <= 0) {
      throw new CheckpointException(
          where + ": '" + key + "' must be a positive integer, got " + (v == null ? "nothing" : v));
    }
    return v.intValue();
  }
}
