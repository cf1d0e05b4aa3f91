package dev.stepweave.models.wan.vae;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The {@code config.json} of a diffusers {@code AutoencoderKLWan} (Wan 2.1 VAE). Absent keys take
 * the diffusers defaults, as the reference does; older checkpoints omit the Wan 2.2 keys.
 *
 * @param decoderBaseDim the decoder's base width, or null to use {@code baseDim}
 * @param temperalDownsample per encoder stage, whether it also halves time (diffusers' spelling)
 * @param patchSize must be null: only Wan 2.2 patchifies
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

  public WanVaeConfig {
    dimMult = List.copyOf(dimMult);
    attnScales = List.copyOf(attnScales);
    temperalDownsample = List.copyOf(temperalDownsample);
    latentsMean = List.copyOf(latentsMean);
    latentsStd = List.copyOf(latentsStd);
    if (isResidual) {
      throw new IllegalArgumentException(
          "is_residual=true (the Wan 2.2 VAE) is not supported; only the Wan 2.1 VAE is");
    }
    if (patchSize != null) {
      throw new IllegalArgumentException(
          "patch_size=" + patchSize + " is not supported; the Wan 2.1 VAE has patch_size null");
    }
    if (!attnScales.isEmpty()) {
      // The reference calls down-block attention with cache arguments it does not accept, so a
      // config with attention scales has no reference behaviour to match.
      throw new IllegalArgumentException(
          "attn_scales=" + attnScales + " is not supported; the Wan 2.1 VAE has none");
    }
    if (baseDim <= 0 || zDim <= 0 || numResBlocks <= 0 || inChannels <= 0 || outChannels <= 0) {
      throw new IllegalArgumentException(
          "base_dim, z_dim, num_res_blocks, in_channels and out_channels must be positive");
    }
    if (decoderBaseDim != null && decoderBaseDim <= 0) {
      throw new IllegalArgumentException("decoder_base_dim must be positive");
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
    int spatial = 1 << (dimMult.size() - 1);
    if (scaleFactorSpatial != null && scaleFactorSpatial != spatial) {
      throw new IllegalArgumentException(
          "scale_factor_spatial="
              + scaleFactorSpatial
              + " disagrees with dim_mult, which downsamples by "
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
  }

  /** The decoder's base width. */
  public int decoderDim() {
    return decoderBaseDim == null ? baseDim : decoderBaseDim;
  }

  /** How many pixels one latent cell spans in height and width. */
  public int spatialCompression() {
    return 1 << (dimMult.size() - 1);
  }

  /** How many frames one latent frame spans (after the first, which stands alone). */
  public int temporalCompression() {
    return 1 << temperalDownsample.stream().filter(b -> b).count();
  }

  /** The decoder's per-stage temporal upsampling: the encoder's, reversed. */
  public List<Boolean> temporalUpsample() {
    return temperalDownsample.reversed();
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

  /** Builds a config from parsed JSON, with the diffusers defaults for absent keys. */
  public static WanVaeConfig fromJson(JsonNode json) {
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
        json.path("is_residual").asBoolean(false),
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
