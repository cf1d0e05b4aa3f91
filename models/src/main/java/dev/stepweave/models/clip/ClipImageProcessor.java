package dev.stepweave.models.clip;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * transformers' {@code CLIPImageProcessor}, from its {@code preprocessor_config.json}: resize so
 * the shortest edge has {@code size.shortest_edge} pixels (the long edge scaled alike, rounded
 * down; the 8-bit antialiased bicubic filter of {@link AntialiasedResize}), centre crop to {@code
 * crop_size} (offsets rounded down), rescale ({@code × rescale_factor}) and normalise ({@code (x −
 * mean) / std} per channel) — bit for bit what the reference's default, torchvision-backed
 * processor computes on the CPU.
 *
 * <p>Every key of the file is read: a setting this class does not implement (another resampling
 * filter, another kind of size, an unknown key) is a one-line error naming the file and the key.
 * Keys the file leaves out take the reference class's defaults. Input images are 8-bit RGB already,
 * so {@code do_convert_rgb} has nothing to do.
 *
 * @param shortestEdge the resized image's shortest edge, or 0 when {@code do_resize} is false
 * @param cropHeight the crop's height, or 0 when {@code do_center_crop} is false
 * @param cropWidth the crop's width, or 0 when {@code do_center_crop} is false
 * @param rescale {@code do_rescale}
 * @param rescaleFactor the factor that takes 0..255 values to the normalisation's scale
 * @param normalize {@code do_normalize}
 * @param mean per-channel mean subtracted after rescaling
 * @param std per-channel divisor after the mean
 */
public record ClipImageProcessor(
    int shortestEdge,
    int cropHeight,
    int cropWidth,
    boolean rescale,
    double rescaleFactor,
    boolean normalize,
    List<Float> mean,
    List<Float> std) {

  /** Pillow's {@code Resampling.BICUBIC}. */
  private static final int PIL_BICUBIC = 3;

  private static final int CHANNELS = 3;
  private static final int DEFAULT_SIZE = 224;
  private static final double DEFAULT_RESCALE = 1.0 / 255;
  private static final List<Double> OPENAI_CLIP_MEAN = List.of(0.48145466, 0.4578275, 0.40821073);
  private static final List<Double> OPENAI_CLIP_STD = List.of(0.26862954, 0.26130258, 0.27577711);

  /** The processor's class names (transformers 4 called the torchvision-backed one "Fast"). */
  private static final Set<String> PROCESSOR_TYPES =
      Set.of("CLIPImageProcessor", "CLIPImageProcessorFast");

  /** Keys that name classes and change nothing the processor computes. */
  private static final Set<String> DESCRIPTIVE_KEYS =
      Set.of("image_processor_type", "feature_extractor_type", "processor_class");

  private static final Set<String> SETTINGS =
      Set.of(
          "do_resize",
          "size",
          "resample",
          "do_center_crop",
          "crop_size",
          "do_rescale",
          "rescale_factor",
          "do_normalize",
          "image_mean",
          "image_std",
          "do_convert_rgb");

  public ClipImageProcessor {
    mean = List.copyOf(mean);
    std = List.copyOf(std);
    if (mean.size() != CHANNELS || std.size() != CHANNELS) {
      throw new IllegalArgumentException("mean and std need one value per RGB channel");
    }
  }

  /** Reads {@code preprocessor_config.json}. */
  public static ClipImageProcessor read(Path preprocessorConfig) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(preprocessorConfig.toFile());
    } catch (IOException e) {
      throw new CheckpointException(
          preprocessorConfig + ": cannot read (" + e.getMessage() + ")", e);
    }
    return fromJson(root, preprocessorConfig.toString());
  }

  /**
   * Parses a processor config.
   *
   * @param where what to name in errors (normally the file)
   */
  public static ClipImageProcessor fromJson(JsonNode root, String where) {
    if (root == null || !root.isObject()) {
      throw new CheckpointException(where + ": expected a JSON object");
    }
    for (Iterator<String> keys = root.fieldNames(); keys.hasNext(); ) {
      String key = keys.next();
      if (!SETTINGS.contains(key) && !DESCRIPTIVE_KEYS.contains(key)) {
        throw new CheckpointException(
            where + ": '" + key + "' is not a CLIPImageProcessor setting this runtime implements");
      }
    }
    JsonNode type = root.get("image_processor_type");
    if (type != null && !PROCESSOR_TYPES.contains(type.asText())) {
      throw new CheckpointException(
          where + ": image_processor_type " + type + " is not a CLIP image processor");
    }
    JsonNode resample = root.get("resample");
    if (resample != null && !(resample.isIntegralNumber() && resample.intValue() == PIL_BICUBIC)) {
      throw new CheckpointException(
          where + ": resample " + resample + " is not supported (only 3, bicubic)");
    }
    int shortestEdge = flag(root, "do_resize", where) ? shortestEdge(root, where) : 0;
    int cropHeight = 0;
    int cropWidth = 0;
    if (flag(root, "do_center_crop", where)) {
      JsonNode crop = root.get("crop_size");
      if (crop != null && crop.isObject()) {
        onlyKeys(crop, Set.of("height", "width"), "crop_size", where);
        cropHeight = positiveInt(crop, "height", "crop_size.height", where);
        cropWidth = positiveInt(crop, "width", "crop_size.width", where);
      } else {
        // A bare number is a square crop (the processor's legacy form).
        cropHeight =
            crop == null ? DEFAULT_SIZE : positiveInt(root, "crop_size", "crop_size", where);
        cropWidth = cropHeight;
      }
      if (shortestEdge > 0 && shortestEdge < Math.max(cropHeight, cropWidth)) {
        throw new CheckpointException(
            where
                + ": size.shortest_edge "
                + shortestEdge
                + " is smaller than crop_size "
                + cropHeight
                + "x"
                + cropWidth
                + " (the crop would pad)");
      }
    }
    boolean rescale = flag(root, "do_rescale", where);
    JsonNode factor = root.get("rescale_factor");
    if (factor != null && !(factor.isNumber() && factor.doubleValue() > 0)) {
      throw new CheckpointException(
          where + ": rescale_factor must be a positive number, got " + factor);
    }
    boolean normalize = flag(root, "do_normalize", where);
    List<Float> mean = perChannel(root, "image_mean", OPENAI_CLIP_MEAN, where);
    List<Float> std = perChannel(root, "image_std", OPENAI_CLIP_STD, where);
    for (float s : std) {
      if (!(s != 0 && Float.isFinite(s))) {
        throw new CheckpointException(where + ": image_std " + std + " must be finite and nonzero");
      }
    }
    flag(root, "do_convert_rgb", where);
    return new ClipImageProcessor(
        shortestEdge,
        cropHeight,
        cropWidth,
        rescale,
        factor == null ? DEFAULT_RESCALE : factor.doubleValue(),
        normalize,
        mean,
        std);
  }

  /**
   * Preprocesses a batch of images into the encoder's input. Each image is processed alone, so its
   * result does not depend on the others.
   *
   * @return {@code pixel_values} {@code [B, 3, H, W]} F32 on the host
   * @throws IllegalArgumentException when the images come out in different sizes (no centre crop)
   *     or an image is smaller than the crop
   */
  public Tensor preprocess(List<RgbImage> images) {
    if (images.isEmpty()) {
      throw new IllegalArgumentException("no images to preprocess");
    }
    List<RgbImage> prepared = images.stream().map(this::resizeAndCrop).toList();
    int height = prepared.getFirst().height();
    int width = prepared.getFirst().width();
    int plane = height * width;
    float[] out = new float[images.size() * CHANNELS * plane];
    for (int b = 0; b < prepared.size(); b++) {
      RgbImage image = prepared.get(b);
      if (image.height() != height || image.width() != width) {
        throw new IllegalArgumentException(
            "images preprocess to different sizes ("
                + width
                + "x"
                + height
                + " and "
                + image.width()
                + "x"
                + image.height()
                + "): they cannot share a batch");
      }
      for (int c = 0; c < CHANNELS; c++) {
        int base = (b * CHANNELS + c) * plane;
        for (int y = 0; y < height; y++) {
          for (int x = 0; x < width; x++) {
            out[base + y * width + x] = value(image.get(x, y, c), c);
          }
        }
      }
    }
    return Tensor.of(out, images.size(), CHANNELS, height, width);
  }

  /**
   * One rescaled, normalised sample, in float as the reference computes it: with both steps on, the
   * rescale is folded into the mean and the std, leaving one subtraction and one division.
   */
  private float value(int level, int channel) {
    if (normalize) {
      float unscale = rescale ? (float) (1.0 / rescaleFactor) : 1f;
      return (level - mean.get(channel) * unscale) / (std.get(channel) * unscale);
    }
    return rescale ? level * (float) rescaleFactor : level;
  }

  /** {@link #preprocess} of one image: {@code [1, 3, H, W]}. */
  public Tensor preprocess(RgbImage image) {
    return preprocess(List.of(image));
  }

  private RgbImage resizeAndCrop(RgbImage image) {
    RgbImage resized = image;
    if (shortestEdge > 0) {
      int[] size = resizedSize(image.width(), image.height());
      resized =
          AntialiasedResize.resize(
              image,
              size[0],
              size[1],
              AntialiasedResize.Filter.BICUBIC,
              AntialiasedResize.Rounding.TORCH_UINT8);
    }
    return cropHeight > 0 ? centreCrop(resized) : resized;
  }

  /**
   * {@code {width, height}} with the shortest edge at {@link #shortestEdge} and the other scaled by
   * the same factor, rounded down (transformers' {@code get_resize_output_image_size}).
   */
  int[] resizedSize(int width, int height) {
    int shortSide = Math.min(width, height);
    int longSide = Math.max(width, height);
    int scaledLong = (int) ((double) ((long) shortestEdge * longSide) / shortSide);
    return width <= height
        ? new int[] {shortestEdge, scaledLong}
        : new int[] {scaledLong, shortestEdge};
  }

  /** The centred {@code cropWidth × cropHeight} window, its offsets rounded down. */
  private RgbImage centreCrop(RgbImage image) {
    if (image.width() < cropWidth || image.height() < cropHeight) {
      throw new IllegalArgumentException(
          "a "
              + image.width()
              + "x"
              + image.height()
              + " image is smaller than the "
              + cropWidth
              + "x"
              + cropHeight
              + " crop");
    }
    int top = (image.height() - cropHeight) / 2;
    int left = (image.width() - cropWidth) / 2;
    byte[] rgb = new byte[cropWidth * cropHeight * CHANNELS];
    for (int y = 0; y < cropHeight; y++) {
      System.arraycopy(
          image.rgb(),
          ((top + y) * image.width() + left) * CHANNELS,
          rgb,
          y * cropWidth * CHANNELS,
          cropWidth * CHANNELS);
    }
    return new RgbImage(cropWidth, cropHeight, rgb);
  }

  private static int shortestEdge(JsonNode root, String where) {
    JsonNode size = root.get("size");
    if (size == null) {
      return DEFAULT_SIZE;
    }
    if (size.isObject()) {
      onlyKeys(size, Set.of("shortest_edge"), "size", where);
      return positiveInt(size, "shortest_edge", "size.shortest_edge", where);
    }
    // A bare number is the shortest edge (the processor's legacy form).
    return positiveInt(root, "size", "size", where);
  }

  private static void onlyKeys(JsonNode object, Set<String> allowed, String name, String where) {
    for (Iterator<Map.Entry<String, JsonNode>> it = object.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      // A null entry is an unset alternative ("longest_edge": null), as transformers writes them.
      if (!allowed.contains(e.getKey()) && !e.getValue().isNull()) {
        throw new CheckpointException(
            where + ": " + name + "." + e.getKey() + " is not supported (only " + allowed + ")");
      }
    }
  }

  private static boolean flag(JsonNode root, String key, String where) {
    JsonNode v = root.get(key);
    if (v == null) {
      return true; // every step is on by default in the reference
    }
    if (!v.isBoolean()) {
      throw new CheckpointException(where + ": '" + key + "' must be true or false, got " + v);
    }
    return v.booleanValue();
  }

  private static int positiveInt(JsonNode parent, String key, String name, String where) {
    JsonNode v = parent.get(key);
    if (v == null || !v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() <= 0) {
      throw new CheckpointException(
          where
              + ": '"
              + name
              + "' must be a positive integer, got "
              + (v == null ? "nothing" : v));
    }
    return v.intValue();
  }

  private static List<Float> perChannel(
      JsonNode root, String key, List<Double> fallback, String where) {
    JsonNode v = root.get(key);
    if (v == null) {
      return fallback.stream().map(Double::floatValue).toList();
    }
    if (v.isNumber()) {
      return List.of(v.floatValue(), v.floatValue(), v.floatValue());
    }
    if (!v.isArray() || v.size() != CHANNELS) {
      throw new CheckpointException(
          where + ": '" + key + "' must be a number or " + CHANNELS + " numbers, got " + v);
    }
    Float[] values = new Float[CHANNELS];
    for (int c = 0; c < CHANNELS; c++) {
      if (!v.get(c).isNumber()) {
        throw new CheckpointException(where + ": '" + key + "' must hold numbers, got " + v);
      }
      values[c] = v.get(c).floatValue();
    }
    return List.of(values);
  }
}
