package dev.stepweave.models.wan;

import dev.stepweave.core.card.CacheContract;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.card.CheckpointManifest;
import dev.stepweave.core.card.ComponentKind;
import dev.stepweave.core.card.ComponentSpec;
import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.LoopSpec;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.ParallelismContract;
import dev.stepweave.core.card.ParitySpec;
import dev.stepweave.core.card.PrecisionContract;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.DiffusersDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Cards for Wan 2.1 text-to-video checkpoints. */
public final class WanCards {
  public static final String FAMILY = "wan";
  public static final String TEXT_ENCODE = "text_encode";
  public static final String DENOISE = "denoise";
  public static final String VAE_DECODE = "vae_decode";

  /** The diffusers class each component must have, by component id. */
  static final Map<String, String> COMPONENT_CLASSES =
      Map.of(
          "transformer", "WanTransformer3DModel",
          "vae", "AutoencoderKLWan",
          "text_encoder", "UMT5EncoderModel",
          "tokenizer", "",
          "scheduler", "");

  /**
   * Max abs error per compared output, float32 on the CPU against the float32 reference: the bounds
   * of {@code golden/README.md}, by the names the verifier looks them up under ("dit" covers the
   * output and every tap; "prompt_embeds" both guidance branches; "clip" the image encoder's {@code
   * image_embeds} from recorded {@code pixel_values}, "pixel_values" the image processor's output,
   * whose bicubic filter differs between libraries in the last bits).
   */
  private static final Map<String, Double> GOLDEN_TOLERANCES =
      Map.ofEntries(
          Map.entry("randn", 1e-6),
          Map.entry("sampler", 1e-5),
          Map.entry("umt5", 1e-4),
          Map.entry("clip", 1e-4),
          Map.entry("pixel_values", 2e-2),
          Map.entry("dit", 1e-4),
          Map.entry("vae", 5e-4),
          Map.entry("prompt_ids", 0.0),
          Map.entry("prompt_embeds", 5e-4),
          Map.entry("step_latents", 5e-4),
          Map.entry("frames", 2e-3));

  private WanCards() {}

  /**
   * The checkpoint's card: its {@code card.json} when present, else one imported from {@code
   * model_index.json} (recipe "base", provenance unknown). Validated before any weights load.
   */
  public static ModelCard cardFor(DiffusersDirectory dir) {
    Path cardFile = dir.dir().resolve(CardJson.FILE_NAME);
    ModelCard card = Files.isRegularFile(cardFile) ? CardJson.read(cardFile) : importDiffusers(dir);
    if (!FAMILY.equals(card.family())) {
      throw new CheckpointException(
          cardFile + ": card family '" + card.family() + "' is not " + FAMILY);
    }
    return card;
  }

  /**
   * Imports a diffusers WanPipeline checkpoint.
   *
   * @throws CheckpointException when a component T2V needs is missing or of another class
   */
  public static ModelCard importDiffusers(DiffusersDirectory dir) {
    Path index = dir.dir().resolve("model_index.json");
    if (!dir.pipelineClass().isEmpty() && !dir.pipelineClass().equals("WanPipeline")) {
      throw new CheckpointException(
          index
              + ": pipeline '"
              + dir.pipelineClass()
              + "' is not supported (only WanPipeline, text-to-video)");
    }
    checkAttributes(index, dir);
    boolean twoExperts = checkExperts(index, dir);
    for (var e : dir.components().entrySet()) {
      if (!COMPONENT_CLASSES.containsKey(e.getKey())
          && !(twoExperts && e.getKey().equals(SECOND_EXPERT))) {
        throw new CheckpointException(
            index
                + ": component '"
                + e.getKey()
                + "' ("
                + e.getValue().className()
                + ") is not supported yet"
                + UNSUPPORTED_COMPONENTS.getOrDefault(e.getKey(), ""));
      }
    }
    Map<String, ComponentSpec> components = new LinkedHashMap<>();
    for (var e : COMPONENT_CLASSES.entrySet()) {
      String id = e.getKey();
      var declared = dir.components().get(id);
      if (declared == null) {
        throw new CheckpointException(
            index + ": missing component '" + id + "' (Wan text-to-video needs it)");
      }
      if (!e.getValue().isEmpty() && !e.getValue().equals(declared.className())) {
        throw new CheckpointException(
            index
                + ": component '"
                + id
                + "' is "
                + declared.className()
                + ", expected "
                + e.getValue());
      }
      components.put(
          id, new ComponentSpec(id, kindOf(id), id, declared.className(), Precision.F32));
    }
    if (twoExperts) {
      components.put(
          SECOND_EXPERT,
          new ComponentSpec(
              SECOND_EXPERT,
              ComponentKind.DIT,
              SECOND_EXPERT,
              expertClass(index, dir),
              Precision.F32));
      WanTransformerConfig.read(dir.component(SECOND_EXPERT).configFile());
    }
    // The configs' every field the components do not implement is refused here, naming the file,
    // before any weights load (loading reads them again).
    Path transformerConfig = dir.component("transformer").configFile();
    WanTransformerConfig.ImageConditioning image =
        WanTransformerConfig.read(transformerConfig).image();
    if (image != null) {
      // The transformer runs image tokens, but the card has no image encoder or I2V task yet.
      throw new CheckpointException(
          transformerConfig
              + ": image_dim "
              + image.imageDim()
              + " (image-token conditioning, Wan2.1 I2V) is not supported by the Wan import yet");
    }
    Path vaeConfig = dir.component("vae").configFile();
    if (WanVaeConfig.read(vaeConfig).isResidual()) {
      // The VAE itself loads; a TI2V checkpoint also needs per-token timesteps and its task.
      throw new CheckpointException(
          vaeConfig
              + ": is_residual=true (the Wan 2.2 VAE, of Wan2.2 TI2V checkpoints) is not supported"
              + " by the Wan import yet");
    }
    String modelId = dir.dir().toAbsolutePath().normalize().getFileName().toString();
    return card(modelId, components, RecipeSpec.base(), GenerationDefaults.WAN_480P);
  }

  /** The low-noise expert of a two-expert (Wan2.2 A14B) checkpoint. */
  static final String SECOND_EXPERT = "transformer_2";

  /** What a component this import does not implement would be for, in its refusal. */
  private static final Map<String, String> UNSUPPORTED_COMPONENTS =
      Map.of(
          "image_encoder", " (image conditioning, Wan2.1 I2V)",
          "image_processor", " (image conditioning, Wan2.1 I2V)");

  /**
   * Whether the checkpoint has two experts: {@code transformer_2} and {@code boundary_ratio} come
   * together (either alone would run one expert where the reference switches between two).
   *
   * @throws CheckpointException naming the file and the field that is missing or out of range
   */
  private static boolean checkExperts(Path index, DiffusersDirectory dir) {
    var ratio = dir.attributes().get("boundary_ratio");
    boolean hasRatio = ratio != null && !ratio.isNull();
    boolean hasSecond = dir.components().containsKey(SECOND_EXPERT);
    if (hasRatio && !(ratio.isNumber() && ratio.doubleValue() > 0 && ratio.doubleValue() < 1)) {
      throw new CheckpointException(
          index + ": boundary_ratio must be a number between 0 and 1, got " + ratio);
    }
    if (hasRatio && !hasSecond) {
      throw new CheckpointException(
          index
              + ": boundary_ratio "
              + ratio
              + " switches to a second expert, but there is no component 'transformer_2'");
    }
    if (hasSecond && !hasRatio) {
      throw new CheckpointException(
          index
              + ": component 'transformer_2' needs a boundary_ratio (when to switch to it); there"
              + " is none");
    }
    return hasSecond;
  }

  private static String expertClass(Path index, DiffusersDirectory dir) {
    String cls = dir.components().get(SECOND_EXPERT).className();
    if (!cls.equals(COMPONENT_CLASSES.get("transformer"))) {
      throw new CheckpointException(
          index
              + ": component 'transformer_2' is "
              + cls
              + ", expected "
              + COMPONENT_CLASSES.get("transformer"));
    }
    return cls;
  }

  /**
   * Refuses every pipeline attribute of {@code model_index.json} the Wan T2V import does not
   * implement: a Wan2.2 checkpoint loaded as Wan2.1 would generate without a word, and wrongly.
   */
  private static void checkAttributes(Path index, DiffusersDirectory dir) {
    for (var e : dir.attributes().entrySet()) {
      String name = e.getKey();
      var value = e.getValue();
      switch (name) {
        case "_class_name", "_diffusers_version", "_name_or_path" -> {}
        case "boundary_ratio" -> {} // checked with transformer_2 (checkExperts)
        case "expand_timesteps" -> {
          if (!value.isBoolean()) {
            throw new CheckpointException(
                index + ": expand_timesteps must be true or false, got " + value);
          }
          if (value.booleanValue()) {
            throw new CheckpointException(
                index
                    + ": expand_timesteps=true (per-token timesteps, Wan2.2 TI2V) is not supported"
                    + " yet");
          }
        }
        default ->
            throw new CheckpointException(
                index
                    + ": field '"
                    + name
                    + "' ("
                    + value
                    + ") is not implemented by the Wan import");
      }
    }
  }

  /** A Wan T2V card over the standard components with the given recipe. */
  public static ModelCard card(
      String modelId,
      Map<String, ComponentSpec> components,
      RecipeSpec recipe,
      GenerationDefaults defaults) {
    Map<String, LoopSpec> loops = new LinkedHashMap<>();
    loops.put(
        TEXT_ENCODE,
        new LoopSpec(TEXT_ENCODE, WorkKind.ENCODER_CHUNK, List.of("tokenizer", "text_encoder")));
    List<String> denoise =
        components.containsKey(SECOND_EXPERT)
            ? List.of("transformer", SECOND_EXPERT, "scheduler")
            : List.of("transformer", "scheduler");
    loops.put(DENOISE, new LoopSpec(DENOISE, WorkKind.DIFFUSION_STEP, denoise));
    loops.put(VAE_DECODE, new LoopSpec(VAE_DECODE, WorkKind.VAE_TILE, List.of("vae")));
    List<String> program = List.of(TEXT_ENCODE, DENOISE, VAE_DECODE);
    Map<String, CheckpointManifest.Requirement> manifest = new LinkedHashMap<>();
    for (String id : components.keySet()) {
      manifest.put(id, new CheckpointManifest.Requirement(EnumSet.allOf(TaskType.class), Set.of()));
    }
    List<String> taps =
        new ArrayList<>(
            List.of("patch_embedding", "temb", "timestep_proj", "context", "rope_cos", "rope_sin"));
    taps.add("block_*");
    return new ModelCard(
            modelId,
            FAMILY,
            components,
            loops,
            Map.of(TaskType.T2V, program, TaskType.T2I, program),
            recipe,
            new ParitySpec(ConsistencyRung.C1, taps, GOLDEN_TOLERANCES),
            Map.of(
                "text_embedding",
                CacheContract.exact("text_embedding", "feature"),
                "dbcache",
                CacheContract.distributionAltering("dbcache", "residual"),
                "fbcache",
                CacheContract.distributionAltering("fbcache", "residual"),
                "stepcache",
                CacheContract.distributionAltering("stepcache", "step")),
            ParallelismContract.single(),
            new PrecisionContract(Set.of(Precision.F32, Precision.BF16), Precision.F32),
            new CheckpointManifest(manifest),
            defaults)
        .validate(modelId);
  }

  private static ComponentKind kindOf(String id) {
    return switch (id) {
      case "transformer" -> ComponentKind.DIT;
      case "vae" -> ComponentKind.VAE;
      case "text_encoder" -> ComponentKind.TEXT_ENCODER;
      case "tokenizer" -> ComponentKind.TOKENIZER;
      case "scheduler" -> ComponentKind.SCHEDULER;
      default -> throw new IllegalArgumentException("not a Wan component: " + id);
    };
  }
}
