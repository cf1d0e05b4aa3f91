package dev.stepweave.models.wan.vae;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * The {@code config.json} of a diffusers {@code AutoencoderKLWan}: the Wan 2.1 VAE, or with {@code
 * is_residual} the Wan 2.2 one (residual down and up blocks, pixels folded {@code patch_size ×
 * patch_size} into channels). Absent keys take the diffusers defaults, as the reference does; older
 * checkpoints omit the Wan 2.2 keys. A key the reference does not define is refused.
 *
 * @param decoderBaseDim the decoder's base width, or null to use {@code baseDim}
 * @param temperalDownsample per encoder stage, whether it also halves time (diffusers' spelling)
 * @param inChannels the encoder's input channels: video channels × {@code patch_size²}
 * @param outChannels the decoder's output channels: video channels × {@code patch_size²}
 * @param patchSize the side of the pixel patches folded into channels, or null for none
 * @param scaleFactorSpatial declared spatial compression, checked against the architecture
 * @param scaleFactorTemporal declared temporal compression, checked against the architecture
 */
public record WanVaeConfig(
    int baseDim,
    Integer decoderBaseDim,
    int zDim,
    List<Integer> dimMult,
    int numResBlocks,
    List<Double> attnScales,
    List<Boolean> temperalDownsample,
    double dropout,
    List<Double> latentsMean,
    List<Double> latentsStd,
    boolean isResidual,
    int inChannels,
    int outChannels,
    Integer patchSize,
    Integer scaleFactorSpatial,
    Integer scaleFactorTemporal) {

  /** The keys of diffusers' {@code AutoencoderKLWan} config; any other is refused. */
  private static final Set<String> FIELDS =
      Set.of(
          "_class_name",
          "_diffusers_version",
          "_name_or_path",
          "base_dim",
          "decoder_base_dim",
          "z_dim",
          "dim_mult",
          "num_res_blocks",
          "attn_scales",
          "temperal_downsample",
          "dropout",
          "latents_mean",
          "latents_std",
          "is_residual",
          "in_channels",
          "out_channels",
          "patch_size",
          "scale_factor_spatial",
          "scale_factor_temporal");

  private static final String CLASS_NAME = "AutoencoderKLWan";

  public WanVaeConfig {
    dimMult = List.copyOf(dimMult);
    attnScales = List.copyOf(attnScales);
    temperalDownsample = List.copyOf(temperalDownsample);
    latentsMean = List.copyOf(latentsMean);
    latentsStd = List.copyOf(latentsStd);
    if (!attnScales.isEmpty()) {
      // The reference calls down-block attention with cache arguments it does not accept, so a
      // config with attention scales has no reference behaviour to match.
      throw new IllegalArgumentException(
          "attn_scales=" + attnScales + " is not supported; Wan VAEs have none");
    }
    if (baseDim <= 0 || zDim <= 0 || numResBlocks <= 0 || inChannels <= 0 || outChannels <= 0) {
      throw new IllegalArgumentException(
          "base_dim, z_dim, num_res_blocks, in_channels and out_channels must be positive");
    }
    if (decoderBaseDim != null && decoderBaseDim <= 0) {
      throw new IllegalArgumentException("decoder_base_dim must be positive");
    }
    if (patchSize != null && patchSize <= 0) {
      throw new IllegalArgumentException("patch_size=" + patchSize + " must be positive");
    }
    int patchArea = patchSize == null ? 1 : patchSize * patchSize;
    if (inChannels % patchArea != 0 || outChannels % patchArea != 0) {
      throw new IllegalArgumentException(
          "in_channels="
              + inChannels
              + " and out_channels="
              + outChannels
              + " must be multiples of patch_size²="
              + patchArea);
    }
    if (dimMult.isEmpty() || dimMult.stream().anyMatch(m -> m <= 0)) {
      throw new IllegalArgumentException("dim_mult=" + dimMult + " must be positive factors");
    }
    if (temperalDownsample.size() != dimMult.size() - 1) {
      throw new IllegalArgumentException(
          "temperal_downsample has "
              + temperalDownsample.size()
              + " entries but dim_mult="
              + dimMult
              + " implies "
              + (dimMult.size() - 1));
    }
    if (latentsMean.size() != zDim || latentsStd.size() != zDim) {
      throw new IllegalArgumentException(
          "latents_mean and latents_std need z_dim=" + zDim + " entries each");
    }
    int spatial = (patchSize == null ? 1 : patchSize) << (dimMult.size() - 1);
    if (scaleFactorSpatial != null && scaleFactorSpatial != spatial) {
      throw new IllegalArgumentException(
          "scale_factor_spatial="
              + scaleFactorSpatial
              + " disagrees with patch_size and dim_mult, which downsample by "
              + spatial);
    }
    int temporal = 1 << temperalDownsample.stream().filter(b -> b).count();
    if (scaleFactorTemporal != null && scaleFactorTemporal != temporal) {
      throw new IllegalArgumentException(
          "scale_factor_temporal="
              + scaleFactorTemporal
              + " disagrees with temperal_downsample, which downsamples by "
              + temporal);
    }
    if (isResidual) {
      requireResidualShortcutsFit(
          baseDim, decoderBaseDim == null ? baseDim : decoderBaseDim, dimMult, temperalDownsample);
    }
  }

  /**
   * The residual stages' shortcuts fold each stage's resampling into channels and average channel
   * groups (encoder) or repeat channels (decoder), so each stage's widths must divide accordingly.
   */
  private static void requireResidualShortcutsFit(
      int baseDim, int decoderDim, List<Integer> dimMult, List<Boolean> temperalDownsample) {
    int stages = dimMult.size();
    int[] enc = widths(baseDim, dimMult, false);
    for (int i = 0; i < stages; i++) {
      boolean down = i < stages - 1;
      int folded = enc[i] * (down ? 4 : 1) * (down && temperalDownsample.get(i) ? 2 : 1);
      if (folded % enc[i + 1] != 0) {
        throw new IllegalArgumentException(
            "is_residual: encoder stage "
                + i
                + " folds "
                + folded
                + " values per cell, which cannot average into "
                + enc[i + 1]
                + " channels (base_dim="
                + baseDim
                + ", dim_mult="
                + dimMult
                + ")");
      }
    }
    int[] dec = widths(decoderDim, dimMult, true);
    for (int i = 0; i < stages - 1; i++) {
      int unfolded = dec[i + 1] * 4 * (temperalDownsample.get(stages - 2 - i) ? 2 : 1);
      if (unfolded % dec[i] != 0) {
        throw new IllegalArgumentException(
            "is_residual: decoder stage "
                + i
                + " unfolds "
                + unfolded
                + " values per cell, which "
                + dec[i]
                + " channels cannot repeat into (decoder_base_dim="
                + decoderDim
                + ", dim_mult="
                + dimMult
                + ")");
      }
    }
  }

  /**
   * Widths from a base: the input convolution's output, then each stage's. The decoder starts at
   * the deepest width and walks the multipliers backwards.
   */
  private static int[] widths(int base, List<Integer> dimMult, boolean decoder) {
    int stages = dimMult.size();
    int[] dims = new int[stages + 1];
    dims[0] = base * (decoder ? dimMult.getLast() : 1);
    for (int i = 0; i < stages; i++) {
      dims[i + 1] = base * dimMult.get(decoder ? stages - 1 - i : i);
    }
    return dims;
  }

  /** The decoder's base width. */
  public int decoderDim() {
    return decoderBaseDim == null ? baseDim : decoderBaseDim;
  }

  /** The side of the pixel patches folded into channels (1 when there are none). */
  public int patch() {
    return patchSize == null ? 1 : patchSize;
  }

  /** The channels of the video the encoder takes, before patches are folded into channels. */
  public int videoInChannels() {
    return inChannels / (patch() * patch());
  }

  /** The channels of the video the decoder gives, after patches are unfolded from channels. */
  public int videoOutChannels() {
    return outChannels / (patch() * patch());
  }

  /** How many pixels one latent cell spans in height and width. */
  public int spatialCompression() {
    return patch() << (dimMult.size() - 1);
  }

  /** How many frames one latent frame spans (after the first, which stands alone). */
  public int temporalCompression() {
    return 1 << temperalDownsample.stream().filter(b -> b).count();
  }

  /** The decoder's per-stage temporal upsampling: the encoder's, reversed. */
  public List<Boolean> temporalUpsample() {
    return temperalDownsample.reversed();
  }

  /** The encoder's widths: {@code conv_in}'s output, then each stage's. */
  int[] encoderWidths() {
    return widths(baseDim, dimMult, false);
  }

  /** The decoder's widths: {@code conv_in}'s output (the mid block's), then each up stage's. */
  int[] decoderWidths() {
    return widths(decoderDim(), dimMult, true);
  }

  /** Whether encoder stage {@code stage} ends by halving space (all but the last do). */
  boolean downsamples(int stage) {
    return stage < dimMult.size() - 1;
  }

  /**
   * Reads a {@code config.json}.
   *
   * @throws CheckpointException naming the file when it is unreadable or describes an unsupported
   *     or inconsistent VAE
   */
  public static WanVaeConfig read(Path configJson) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(configJson.toFile());
    } catch (IOException e) {
      throw new CheckpointException(configJson + ": cannot read VAE config: " + e.getMessage(), e);
    }
    try {
      return fromJson(root);
    } catch (IllegalArgumentException e) {
      throw new CheckpointException(configJson + ": " + e.getMessage(), e);
    }
  }

  /**
   * Builds a config from parsed JSON, with the diffusers defaults for absent keys.
   *
   * @throws IllegalArgumentException naming the first unknown, malformed or unsupported field
   */
  public static WanVaeConfig fromJson(JsonNode json) {
    for (String key : (Iterable<String>) json::fieldNames) {
      if (!FIELDS.contains(key)) {
        throw new IllegalArgumentException(
            "field '" + key + "' is not a field of diffusers' " + CLASS_NAME);
      }
    }
    JsonNode className = json.get("_class_name");
    if (className != null && !CLASS_NAME.equals(className.asText())) {
      throw new IllegalArgumentException(
          "_class_name is " + className + ", expected \"" + CLASS_NAME + "\"");
    }
    return new WanVaeConfig(
        intOr(json, "base_dim", 96),
        nullableInt(json, "decoder_base_dim"),
        intOr(json, "z_dim", 16),
        listOr(json, "dim_mult", JsonNode::asInt, List.of(1, 2, 4, 4)),
        intOr(json, "num_res_blocks", 2),
        listOr(json, "attn_scales", JsonNode::asDouble, List.of()),
        listOr(json, "temperal_downsample", JsonNode::asBoolean, List.of(false, true, true)),
        json.path("dropout").asDouble(0.0),
        listOr(json, "latents_mean", JsonNode::asDouble, DEFAULT_LATENTS_MEAN),
        listOr(json, "latents_std", JsonNode::asDouble, DEFAULT_LATENTS_STD),
        booleanOr(json, "is_residual", false),
        intOr(json, "in_channels", 3),
        intOr(json, "out_channels", 3),
        nullableInt(json, "patch_size"),
        json.has("scale_factor_spatial") ? nullableInt(json, "scale_factor_spatial") : 8,
        json.has("scale_factor_temporal") ? nullableInt(json, "scale_factor_temporal") : 4);
  }

  private static final List<Double> DEFAULT_LATENTS_MEAN =
      List.of(
          -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715,
          0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921);

  private static final List<Double> DEFAULT_LATENTS_STD =
      List.of(
          2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652,
          1.5579, 1.6382, 1.1253, 2.8251, 1.9160);

  private static int intOr(JsonNode json, String key, int fallback) {
    JsonNode n = json.get(key);
    if (n == null || n.isNull()) {
      return fallback;
    }
    if (!n.canConvertToInt() || !n.isIntegralNumber()) {
      throw new IllegalArgumentException(key + " must be an integer, got " + n);
    }
    return n.asInt();
  }

  private static boolean booleanOr(JsonNode json, String key, boolean fallback) {
    JsonNode n = json.get(key);
    if (n == null || n.isNull()) {
      return fallback;
    }
    if (!n.isBoolean()) {
      throw new IllegalArgumentException(key + " must be true or false, got " + n);
    }
    return n.booleanValue();
  }

  private static Integer nullableInt(JsonNode json, String key) {
    JsonNode n = json.get(key);
    return n == null || n.isNull() ? null : intOr(json, key, 0);
  }

  private static <T> List<T> listOr(
      JsonNode json, String key, Function<JsonNode, T> element, List<T> fallback) {
    JsonNode n = json.get(key);
    if (n == null || n.isNull()) {
      return fallback;
    }
    if (!n.isArray()) {
      throw new IllegalArgumentException(key + " must be a list, got " + n);
    }
    List<T> out = new ArrayList<>(n.size());
    n.forEach(e -> out.add(element.apply(e)));
    return out;
  }
}
