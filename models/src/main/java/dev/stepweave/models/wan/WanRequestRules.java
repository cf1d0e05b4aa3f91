package dev.stepweave.models.wan;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.DiffusersDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a request must satisfy to run on one Wan checkpoint, known from its card and configs alone:
 * the per-loop settings, the sampler, the guidance policies and the frame size unit. {@link
 * WanModel#validate} applies these rules; {@link #read} gets them without loading any weight, so a
 * product can refuse a bad request before the long load.
 */
public final class WanRequestRules {
  /** The per-loop settings a request may give, by loop id. */
  private static final Map<String, Set<String>> LOOP_SETTINGS =
      Map.of(
          WanCards.TEXT_ENCODE, Set.of("max_sequence_length"),
          WanCards.DENOISE,
              Set.of(
                  "cfg",
                  "cfg_batched",
                  "cfg_zero_init_steps",
                  "cfg_rescale",
                  Guidance.SECOND_SCALE),
          WanCards.VAE_DECODE, Set.of("tile", "tile_size"));

  private final ModelCard card;
  private final ExpertRouting routing;
  private final SamplerChoice samplers;
  private final int defaultMaxSequenceLength;
  private final int vaeSpatialCompression;
  private final WanTransformerConfig.PatchSize patch;

  WanRequestRules(
      ModelCard card,
      ExpertRouting routing,
      SamplerChoice samplers,
      int defaultMaxSequenceLength,
      int vaeSpatialCompression,
      WanTransformerConfig.PatchSize patch) {
    this.card = card;
    this.routing = routing;
    this.samplers = samplers;
    this.defaultMaxSequenceLength = defaultMaxSequenceLength;
    this.vaeSpatialCompression = vaeSpatialCompression;
    this.patch = patch;
  }

  /**
   * The rules of the checkpoint in {@code dir}, from its card and config files; no weight is read.
   *
   * @throws CheckpointException naming the folder, file or field that is missing or wrong
   */
  public static WanRequestRules read(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new CheckpointException("model directory not found: " + dir);
    }
    DiffusersDirectory d = DiffusersDirectory.open(dir);
    ModelCard card = WanCards.cardFor(d);
    SamplerChoice samplers = samplers(d);
    return new WanRequestRules(
        card,
        WanModel.routing(d, samplers),
        samplers,
        tokenizerMaxLength(dir.resolve("tokenizer")),
        WanVaeConfig.fromJson(d.component("vae").config()).spatialCompression(),
        WanTransformerConfig.fromJson(d.component("transformer").config()).patchSize());
  }

  static SamplerChoice samplers(DiffusersDirectory d) {
    var scheduler = d.component("scheduler");
    try {
      return new SamplerChoice(
          Files.readString(scheduler.configFile()), scheduler.configFile().toString());
    } catch (IOException e) {
      throw new CheckpointException(scheduler.configFile() + ": cannot read: " + e.getMessage());
    }
  }

  /** The card the checkpoint is served under. */
  public ModelCard card() {
    return card;
  }

  /** The sampler a request runs with by name: its own or the checkpoint's scheduler's. */
  public String samplerFor(Request request) {
    return request.params().sampler().orElse(samplers.defaultName());
  }

  /**
   * Refuses a request this checkpoint cannot run: an unknown loop or setting, a bad value of one, a
   * second guidance scale on a one-expert model, an unknown sampler, a frame size off the model's
   * unit.
   *
   * @throws InvalidRequestException naming the setting
   */
  public void validate(Request request) {
    request
        .nodeOverrides()
        .forEach(
            (loop, settings) -> {
              Set<String> known = LOOP_SETTINGS.get(loop);
              if (known == null) {
                throw new InvalidRequestException(
                    "unknown loop '"
                        + loop
                        + "' in settings (loops: "
                        + String.join(", ", new TreeSet<>(LOOP_SETTINGS.keySet()))
                        + ")");
              }
              for (String key : settings.keySet()) {
                if (!known.contains(key)) {
                  throw new InvalidRequestException(
                      "unknown setting '"
                          + loop
                          + "."
                          + key
                          + "' (known: "
                          + String.join(", ", new TreeSet<>(known))
                          + ")");
                }
              }
            });
    maxSequenceLength(request);
    if (routing.single()
        && request.overridesFor(WanCards.DENOISE).containsKey(Guidance.SECOND_SCALE)) {
      throw new InvalidRequestException(
          WanCards.DENOISE + "." + Guidance.SECOND_SCALE,
          "denoise."
              + Guidance.SECOND_SCALE
              + " needs a two-expert model; '"
              + card.modelId()
              + "' has one transformer");
    }
    for (int i = 0; i < routing.experts().size(); i++) {
      Guidance.policyFor(request, i);
    }
    samplers.choose(request.params().sampler(), request.params().shift());
    VaeDecodeLoop.tiling(request, vaeSpatialCompression);
    checkSize(request);
  }

  /**
   * The text length prompts are padded to: the {@code text_encode} loop's {@code
   * max_sequence_length} override, else the tokenizer's {@code model_max_length}, else the
   * reference pipeline's 512.
   */
  int maxSequenceLength(Request request) {
    String v = request.overridesFor(WanCards.TEXT_ENCODE).get("max_sequence_length");
    if (v == null) {
      return defaultMaxSequenceLength;
    }
    try {
      int n = Integer.parseInt(v);
      if (n < 1 || n > 4096) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new InvalidRequestException(
          "max_sequence_length must be an integer in 1..4096, got '" + v + "'");
    }
  }

  /**
   * The frame size must fold into whole transformer patches of latents: a multiple of the VAE's
   * spatial compression times the patch (16 for Wan2.1, 32 for Wan2.2 TI2V's 16× VAE). The
   * reference rounds a size that is not down, with a warning; a request here says what it gets.
   */
  private void checkSize(Request request) {
    int unitH = vaeSpatialCompression * patch.h();
    int unitW = vaeSpatialCompression * patch.w();
    var p = request.params();
    if (p.width() % unitW != 0 || p.height() % unitH != 0) {
      throw new InvalidRequestException(
          "size "
              + p.width()
              + "x"
              + p.height()
              + ": model '"
              + card.modelId()
              + "' needs a width that is a multiple of "
              + unitW
              + " and a height of "
              + unitH
              + " (the VAE's "
              + vaeSpatialCompression
              + "x times the transformer's patch)");
    }
  }

  /** {@code model_max_length} of {@code tokenizer_config.json} when sane, else 512. */
  static int tokenizerMaxLength(Path tokenizerDir) {
    Path config = tokenizerDir.resolve("tokenizer_config.json");
    if (!Files.isRegularFile(config)) {
      return WanModel.DEFAULT_MAX_SEQUENCE_LENGTH;
    }
    try {
      var n =
          new com.fasterxml.jackson.databind.ObjectMapper()
              .readTree(config.toFile())
              .get("model_max_length");
      return n != null && n.canConvertToInt() && n.intValue() >= 1 && n.intValue() <= 4096
          ? n.intValue()
          : WanModel.DEFAULT_MAX_SEQUENCE_LENGTH;
    } catch (IOException e) {
      throw new CheckpointException(config + ": unreadable: " + e.getMessage());
    }
  }
}
