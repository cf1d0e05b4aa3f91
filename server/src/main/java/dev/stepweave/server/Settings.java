package dev.stepweave.server;

import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.TaskChoice;
import java.math.BigDecimal;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns the text fields of a create call into diffusion settings, filling what is left out from the
 * card's defaults and holding every value to the server's limits. Each refusal names its field.
 */
final class Settings {
  private static final Pattern SIZE = Pattern.compile("(\\d{1,5})x(\\d{1,5})");
  private static final Pattern PLUGIN_ID = Pattern.compile("[a-z0-9_]{1,64}");
  private static final SecureRandom SEEDS = new SecureRandom();
  static final String SECOND_GUIDANCE = "guidance_scale_2";

  /** A video call's opt-in to latent previews on its event stream. */
  static final String PREVIEW_EVERY = "preview_every";

  private final ModelCard card;
  private final ServerConfig limits;

  private final Set<String> aliases;

  /**
   * @param aliases other names clients may give {@code model} for the card (names OpenAI's clients
   *     hard-code)
   */
  Settings(ModelCard card, ServerConfig limits, Set<String> aliases) {
    this.card = card;
    this.limits = limits;
    this.aliases = Set.copyOf(aliases);
  }

  /**
   * A generation's settings and, for a video, its length as the API reports it.
   *
   * @param seconds the requested {@code seconds} as given, else the length the frame count makes
   * @param plugins the cache plugins the request turns on, with its raw parameters (the engine
   *     validates them against the deployment's schemas)
   * @param exact whether the request refuses distribution-altering plugins
   * @param adapters the adapters to stack, in order (the engine checks names, bounds and count)
   * @param task what the request declares: {@link TaskChoice} for a video, t2i for an image
   * @param image the decoded {@code input_reference}, when the call gave one
   * @param loopSettings per-loop settings the call asked for ({@code guidance_scale_2} is the
   *     denoise loop's {@code guidance_2}: the second expert's scale of a two-expert model)
   * @param previewEvery a {@code media.preview} event every this many denoising steps, 0 for none
   *     ({@code preview_every}, videos only)
   */
  record Generation(
      String prompt,
      DiffusionParams params,
      String seconds,
      String size,
      Map<String, Map<String, String>> plugins,
      boolean exact,
      List<AdapterUse> adapters,
      TaskType task,
      Optional<InputReference.InputImage> image,
      Map<String, Map<String, String>> loopSettings,
      int previewEvery) {
    Generation {
      plugins = Map.copyOf(plugins);
      adapters = List.copyOf(adapters);
      loopSettings = Map.copyOf(loopSettings);
    }
  }

  /**
   * The frame count: {@code num_frames} when given (4k+1), else {@code seconds × fps} rounded to
   * the nearest 4k+1 count (Wan's VAE packs frames 1 + 4k), else the card's default. The task
   * follows the card and whether {@code input_reference} is given; the image is decoded only once
   * every other field has passed and the card takes one.
   */
  Generation video(FormFields.Form form) {
    Map<String, String> f = form.fields();
    String prompt = prompt(f);
    checkModel(f);
    GenerationDefaults d = card.defaults();
    int fps = intField(f, "fps", d.fps(), 1, 240);
    int frames;
    String seconds = f.get("seconds");
    if (f.containsKey("num_frames")) {
      frames = intField(f, "num_frames", 0, 1, limits.maxFrames());
      if ((frames - 1) % 4 != 0) {
        throw ApiException.badRequest("num_frames", "num_frames must be 4k+1, got " + frames);
      }
    } else if (seconds != null) {
      double s = number(seconds, "seconds");
      if (!(s > 0) || s * fps > limits.maxFrames()) {
        throw ApiException.badRequest(
            "seconds",
            "seconds must be > 0 and at most "
                + (limits.maxFrames() - 1) / (double) fps
                + " at "
                + fps
                + " fps, got "
                + seconds);
      }
      frames = 4 * (int) Math.round(s * fps / 4) + 1;
    } else {
      frames = Math.min(d.frames(), limits.maxFrames());
    }
    if (frames > limits.maxFrames()) {
      throw ApiException.badRequest(
          "seconds", "video of " + frames + " frames is longer than " + limits.maxFrames());
    }
    DiffusionParams params = params(f, frames, fps);
    String reported = seconds != null ? seconds : lengthOf(frames, fps);
    var plugins = plugins(f);
    boolean exact = bool(f, "exact");
    var adapters = adapters(f);
    String text = f.get(FormFields.INPUT_REFERENCE);
    Multipart.Upload upload = form.files().get(FormFields.INPUT_REFERENCE);
    TaskType task;
    try {
      task = TaskChoice.forVideo(card, text != null || upload != null, "input_reference");
    } catch (InvalidRequestException e) {
      throw ApiException.badRequest(FormFields.INPUT_REFERENCE, e.getMessage());
    }
    Optional<InputReference.InputImage> image =
        upload != null
            ? Optional.of(InputReference.fromUpload(upload, limits.maxImageBytes()))
            : text != null
                ? Optional.of(InputReference.fromText(text, limits.maxImageBytes()))
                : Optional.empty();
    return new Generation(
        prompt,
        params,
        reported,
        params.width() + "x" + params.height(),
        plugins,
        exact,
        adapters,
        task,
        image,
        secondGuidance(f),
        intField(f, PREVIEW_EVERY, 0, 0, limits.maxSteps()));
  }

  /**
   * {@code guidance_scale_2} as the denoise loop's {@code guidance_2} (the model refuses it unless
   * it has two experts), held to the same bounds as {@code guidance_scale}.
   */
  private static Map<String, Map<String, String>> secondGuidance(Map<String, String> f) {
    if (!f.containsKey(SECOND_GUIDANCE)) {
      return Map.of();
    }
    double g = number(f.get(SECOND_GUIDANCE), SECOND_GUIDANCE);
    if (!(g >= 0) || g > 100) {
      throw ApiException.badRequest(
          SECOND_GUIDANCE, SECOND_GUIDANCE + " must be between 0 and 100, got " + g);
    }
    return Map.of("denoise", Map.of("guidance_2", Double.toString(g)));
  }

  /** One image's settings (a one-frame video); {@code index} offsets the seed for n > 1. */
  Generation image(Map<String, String> f, int index) {
    String prompt = prompt(f);
    checkModel(f);
    DiffusionParams p = params(f, 1, card.defaults().fps());
    DiffusionParams indexed =
        new DiffusionParams(
            p.steps(),
            p.guidance(),
            p.seed() + index,
            p.width(),
            p.height(),
            1,
            p.fps(),
            p.negativePrompt(),
            p.sampler(),
            p.shift());
    return new Generation(
        prompt,
        indexed,
        "0",
        p.width() + "x" + p.height(),
        plugins(f),
        bool(f, "exact"),
        adapters(f),
        TaskType.T2I,
        Optional.empty(),
        Map.of(),
        0);
  }

  String prompt(Map<String, String> f) {
    String prompt = f.get("prompt");
    if (prompt == null || prompt.isBlank()) {
      throw ApiException.badRequest("prompt", "prompt is required");
    }
    checkLength("prompt", prompt);
    return prompt;
  }

  int n(Map<String, String> f) {
    return intField(f, "n", 1, 1, limits.maxImages());
  }

  /**
   * {@code cache} (plugin ids, comma-separated) and {@code cache.PLUGIN.PARAM} fields as the
   * request's plugin parameters. Only the form is checked here; whether a plugin is enabled and its
   * values fit are the engine's checks.
   */
  private static Map<String, Map<String, String>> plugins(Map<String, String> f) {
    Map<String, Map<String, String>> out = new LinkedHashMap<>();
    String list = f.getOrDefault(FormFields.CACHE, "");
    for (String raw : list.split(",")) {
      String id = raw.strip();
      if (id.isEmpty()) {
        continue;
      }
      if (!PLUGIN_ID.matcher(id).matches()) {
        throw ApiException.badRequest(
            FormFields.CACHE,
            "cache must list plugin ids like dbcache,stepcache, got '" + list + "'");
      }
      if (out.putIfAbsent(id, new LinkedHashMap<>()) != null) {
        throw ApiException.badRequest(FormFields.CACHE, "cache names '" + id + "' twice");
      }
    }
    for (Map.Entry<String, String> e : f.entrySet()) {
      String name = e.getKey();
      if (!name.startsWith(FormFields.CACHE + ".")) {
        continue;
      }
      String rest = name.substring(FormFields.CACHE.length() + 1);
      int dot = rest.indexOf('.');
      if (dot <= 0 || dot == rest.length() - 1) {
        throw ApiException.badRequest(
            name, "cache parameters are named cache.PLUGIN.PARAM, got '" + name + "'");
      }
      String id = rest.substring(0, dot);
      Map<String, String> params = out.get(id);
      if (params == null) {
        throw ApiException.badRequest(
            name, name + " is given but cache does not name '" + id + "' (cache: '" + list + "')");
      }
      params.put(rest.substring(dot + 1), e.getValue());
    }
    return out;
  }

  /**
   * The {@code lora.NAME=SCALE} fields in the order they came, as the adapters to stack; the i-th
   * such field is {@code loras[i]} in errors, as its JSON entry would be.
   */
  private static List<AdapterUse> adapters(Map<String, String> f) {
    List<AdapterUse> out = new ArrayList<>();
    for (Map.Entry<String, String> e : f.entrySet()) {
      if (!e.getKey().startsWith(FormFields.LORA)) {
        continue;
      }
      String name = e.getKey().substring(FormFields.LORA.length());
      double scale = number(e.getValue(), FormFields.LORAS + "[" + out.size() + "].scale");
      out.add(new AdapterUse(name, scale));
    }
    return out;
  }

  private static boolean bool(Map<String, String> f, String name) {
    String v = f.get(name);
    if (v == null) {
      return false;
    }
    return switch (v.strip().toLowerCase(java.util.Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default ->
          throw ApiException.badRequest(name, name + " must be true or false, got '" + v + "'");
    };
  }

  private DiffusionParams params(Map<String, String> f, int frames, int fps) {
    GenerationDefaults d = card.defaults();
    int[] wh = size(f.get("size"), d);
    int steps =
        intField(
            f, "num_inference_steps", Math.min(d.steps(), limits.maxSteps()), 1, limits.maxSteps());
    double guidance = d.guidance();
    if (f.containsKey("guidance_scale")) {
      guidance = number(f.get("guidance_scale"), "guidance_scale");
      if (!(guidance >= 0) || guidance > 100) {
        throw ApiException.badRequest(
            "guidance_scale", "guidance_scale must be between 0 and 100, got " + guidance);
      }
    }
    long seed = f.containsKey("seed") ? seed(f.get("seed")) : SEEDS.nextLong() & 0xffffffffL;
    String negative = f.getOrDefault("negative_prompt", "");
    checkLength("negative_prompt", negative);
    return new DiffusionParams(
        steps,
        guidance,
        seed,
        wh[0],
        wh[1],
        frames,
        fps,
        negative,
        Optional.empty(),
        Optional.empty());
  }

  /** {@code WIDTHxHEIGHT}; absent or {@code "auto"} (OpenAI's images default): the card's. */
  private int[] size(String value, GenerationDefaults d) {
    if (value == null || value.equals("auto")) {
      return new int[] {d.width(), d.height()};
    }
    Matcher m = SIZE.matcher(value);
    if (!m.matches()) {
      throw ApiException.badRequest("size", "size must be WIDTHxHEIGHT, got '" + value + "'");
    }
    int w = Integer.parseInt(m.group(1));
    int h = Integer.parseInt(m.group(2));
    if (w < 16 || h < 16 || w % 16 != 0 || h % 16 != 0) {
      throw ApiException.badRequest("size", "size must be multiples of 16, got " + value);
    }
    if (w > limits.maxWidth() || h > limits.maxHeight()) {
      throw ApiException.badRequest(
          "size",
          "size " + value + " is larger than " + limits.maxWidth() + "x" + limits.maxHeight());
    }
    return new int[] {w, h};
  }

  private void checkModel(Map<String, String> f) {
    String model = f.get("model");
    if (model != null && !model.equals(card.modelId()) && !aliases.contains(model)) {
      throw new ApiException(
          404,
          "invalid_request_error",
          "model",
          "model_not_found",
          "model '" + model + "' is not served here (this server serves '" + card.modelId() + "')");
    }
  }

  private void checkLength(String field, String text) {
    if (text.length() > limits.maxPromptChars()) {
      throw ApiException.badRequest(
          field, field + " is longer than " + limits.maxPromptChars() + " characters");
    }
  }

  private static int intField(Map<String, String> f, String name, int fallback, int min, int max) {
    String v = f.get(name);
    if (v == null) {
      return fallback;
    }
    int n;
    try {
      n = Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw ApiException.badRequest(name, name + " must be an integer, got '" + v + "'");
    }
    if (n < min || n > max) {
      throw ApiException.badRequest(
          name, name + " must be between " + min + " and " + max + ", got " + n);
    }
    return n;
  }

  private static double number(String v, String name) {
    try {
      double d = Double.parseDouble(v.trim());
      if (Double.isFinite(d)) {
        return d;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw ApiException.badRequest(name, name + " must be a number, got '" + v + "'");
  }

  private static long seed(String v) {
    try {
      long s = Long.parseLong(v.trim());
      if (s >= 0) {
        return s;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw ApiException.badRequest("seed", "seed must be an integer >= 0, got '" + v + "'");
  }

  /** "5" for 81 frames at 16 fps: the time the frames span, to two decimals. */
  private static String lengthOf(int frames, int fps) {
    BigDecimal s = BigDecimal.valueOf((frames - 1) / (double) fps);
    return s.setScale(2, java.math.RoundingMode.HALF_UP).stripTrailingZeros().toPlainString();
  }
}
