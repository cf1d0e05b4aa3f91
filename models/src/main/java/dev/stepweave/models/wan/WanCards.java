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
import dev.stepweave.models.clip.ClipImageProcessor;
import dev.stepweave.models.clip.ClipVisionConfig;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.DiffusersDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Cards for Wan text-to-video and image-to-video checkpoints. */
public final class WanCards {
  public static final String FAMILY = "wan";
  public static final String TEXT_ENCODE = "text_encode";
  public static final String DENOISE = "denoise";
  public static final String VAE_DECODE = "vae_decode";
  public static final String IMAGE_ENCODE = "image_encode";
  public static final String VAE_ENCODE = "vae_encode";

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
   * Imports a diffusers {@code WanPipeline} (text-to-video) or {@code WanImageToVideoPipeline}
   * checkpoint. An image-to-video one either has a CLIP image encoder and its processor and a
   * transformer that attends to image tokens ({@code image_dim}; Wan2.1 I2V), or neither and a
   * transformer without image tokens (Wan2.2 I2V A14B: the condition latents alone); both kinds
   * take the {@value #CONDITION_CHANNELS} condition channels and the condition latents on top of
   * the noise ({@code in_channels} {@code 2·z_dim + 4}).
   *
   * @throws CheckpointException naming the file and field when a component is missing, of another
   *     class, or its config does not fit the pipeline
   */
  public static ModelCard importDiffusers(DiffusersDirectory dir) {
    Path index = dir.dir().resolve("model_index.json");
    // A model_index.json without _class_name is read as the text-to-video pipeline.
    String pipeline = dir.pipelineClass().isEmpty() ? T2V_PIPELINE : dir.pipelineClass();
    boolean imageToVideo = pipeline.equals(I2V_PIPELINE);
    if (!pipeline.equals(T2V_PIPELINE) && !imageToVideo) {
      throw new CheckpointException(
          index
              + ": pipeline '"
              + pipeline
              + "' is not supported (only WanPipeline, text-to-video, and"
              + " WanImageToVideoPipeline, image-to-video)");
    }
    boolean perToken = checkAttributes(index, dir);
    boolean twoExperts = checkExperts(index, dir);
    if (perToken && imageToVideo) {
      throw new CheckpointException(
          index
              + ": expand_timesteps=true with "
              + I2V_PIPELINE
              + " is not supported (the Wan2.2 TI2V layout is "
              + T2V_PIPELINE
              + ", which also serves the image mode)");
    }
    if (perToken && twoExperts) {
      throw new CheckpointException(
          index
              + ": expand_timesteps=true with two experts (transformer_2) is not supported (the"
              + " Wan2.2 TI2V layout has one transformer)");
    }
    boolean imageEncoder = imageToVideo && hasImageEncoder(index, dir);
    for (var e : dir.components().entrySet()) {
      String id = e.getKey();
      boolean known =
          COMPONENT_CLASSES.containsKey(id)
              || (twoExperts && id.equals(SECOND_EXPERT))
              || (imageEncoder && IMAGE_COMPONENT_CLASSES.containsKey(id));
      if (!known) {
        throw new CheckpointException(
            index
                + ": component '"
                + id
                + "' ("
                + e.getValue().className()
                + ") is not supported"
                + (IMAGE_COMPONENT_CLASSES.containsKey(id)
                    ? " by a " + pipeline + " (image conditioning needs " + I2V_PIPELINE + ")"
                    : ""));
      }
    }
    Map<String, ComponentSpec> components = new LinkedHashMap<>();
    Map<String, String> classes = new LinkedHashMap<>(COMPONENT_CLASSES);
    if (imageEncoder) {
      classes.putAll(IMAGE_COMPONENT_CLASSES);
    }
    for (var e : classes.entrySet()) {
      String id = e.getKey();
      var declared = dir.components().get(id);
      if (declared == null) {
        throw new CheckpointException(
            index + ": missing component '" + id + "' (Wan " + pipeline + " needs it)");
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
    // The configs' every field the components do not implement is refused here, naming the file,
    // before any weights load (loading reads them again).
    Path vaeConfig = dir.component("vae").configFile();
    WanVaeConfig vae = WanVaeConfig.read(vaeConfig);
    // The residual (Wan2.2) VAE and per-token timesteps come together: the TI2V layout.
    if (vae.isResidual() && !perToken) {
      throw new CheckpointException(
          vaeConfig
              + ": is_residual=true (the Wan2.2 VAE) is served only in the Wan2.2 TI2V layout,"
              + " with expand_timesteps=true in "
              + index);
    }
    if (perToken && !vae.isResidual()) {
      throw new CheckpointException(
          index
              + ": expand_timesteps=true (Wan2.2 TI2V) is served only with the Wan2.2 VAE, but "
              + vaeConfig
              + " has is_residual=false");
    }
    Path transformerConfig = dir.component("transformer").configFile();
    WanTransformerConfig transformer = WanTransformerConfig.read(transformerConfig);
    if (perToken && !transformer.patchSize().equals(TI2V_PATCH)) {
      throw new CheckpointException(
          transformerConfig
              + ": patch_size "
              + java.util.Arrays.toString(transformer.patchSize().toArray())
              + " with expand_timesteps (per-token timesteps, the first latent frame's tokens"
              + " masked) needs [1, 2, 2]");
    }
    checkTransformer(transformerConfig, transformer, pipeline, imageEncoder, vae.zDim());
    if (twoExperts) {
      components.put(
          SECOND_EXPERT,
          new ComponentSpec(
              SECOND_EXPERT,
              ComponentKind.DIT,
              SECOND_EXPERT,
              expertClass(index, dir),
              Precision.F32));
      Path second = dir.component(SECOND_EXPERT).configFile();
      checkTransformer(
          second, WanTransformerConfig.read(second), pipeline, imageEncoder, vae.zDim());
    }
    if (imageEncoder) {
      checkImageEncoder(dir, transformerConfig, transformer.image().imageDim());
    }
    String modelId = dir.dir().toAbsolutePath().normalize().getFileName().toString();
    return card(
        modelId,
        components,
        RecipeSpec.base(),
        perToken ? TI2V_720P : GenerationDefaults.WAN_480P,
        perToken ? TaskType.TI2V : imageToVideo ? TaskType.I2V : TaskType.T2V);
  }

  /**
   * Wan2.2 TI2V-5B's reference settings (its model card's example): 1280×704, 121 frames at 24 fps,
   * 50 steps, guidance 5.
   */
  public static final GenerationDefaults TI2V_720P =
      new GenerationDefaults(1280, 704, 121, 24, 50, 5.0);

  /** The transformer patch the per-token timestep mask of the TI2V layout is made for. */
  private static final WanTransformerConfig.PatchSize TI2V_PATCH =
      new WanTransformerConfig.PatchSize(1, 2, 2);

  /** The text-to-video pipeline class. */
  private static final String T2V_PIPELINE = "WanPipeline";

  /** The image-to-video pipeline class (Wan2.1 I2V, Wan2.2 I2V A14B). */
  private static final String I2V_PIPELINE = "WanImageToVideoPipeline";

  /** The CLIP vision encoder of a Wan2.1 I2V checkpoint. */
  public static final String IMAGE_ENCODER = "image_encoder";

  /** The CLIP image processor of a Wan2.1 I2V checkpoint. */
  public static final String IMAGE_PROCESSOR = "image_processor";

  /** The image components and the class each must have. */
  static final Map<String, String> IMAGE_COMPONENT_CLASSES =
      Map.of(IMAGE_ENCODER, "CLIPVisionModel", IMAGE_PROCESSOR, "CLIPImageProcessor");

  /** The condition's mask channels (one per frame the VAE folds into a latent frame). */
  public static final int CONDITION_CHANNELS = 4;

  /**
   * Whether an image-to-video checkpoint has its image encoder: the encoder and its processor come
   * together (either alone leaves the other unusable).
   */
  private static boolean hasImageEncoder(Path index, DiffusersDirectory dir) {
    boolean encoder = dir.components().containsKey(IMAGE_ENCODER);
    boolean processor = dir.components().containsKey(IMAGE_PROCESSOR);
    if (encoder != processor) {
      throw new CheckpointException(
          index
              + ": component '"
              + (encoder ? IMAGE_ENCODER : IMAGE_PROCESSOR)
              + "' needs '"
              + (encoder ? IMAGE_PROCESSOR : IMAGE_ENCODER)
              + "', which is missing");
    }
    return encoder;
  }

  /**
   * A transformer config against its pipeline: image tokens exactly when there is an image encoder,
   * and the input channels the pipeline concatenates (the noise, for I2V also the mask and the
   * condition latents).
   */
  private static void checkTransformer(
      Path config,
      WanTransformerConfig transformer,
      String pipeline,
      boolean imageEncoder,
      int zDim) {
    var image = transformer.image();
    if (image != null && !imageEncoder) {
      throw new CheckpointException(
          config
              + ": image_dim "
              + image.imageDim()
              + " attends to image-encoder states, but "
              + (pipeline.equals(I2V_PIPELINE)
                  ? "the checkpoint has no image_encoder"
                  : "a " + pipeline + " gives none (image conditioning is " + I2V_PIPELINE + ")"));
    }
    if (image == null && imageEncoder) {
      throw new CheckpointException(
          config
              + ": no image_dim, but the checkpoint has an image_encoder whose states the"
              + " transformer would never read");
    }
    boolean imageToVideo = pipeline.equals(I2V_PIPELINE);
    int expected = imageToVideo ? 2 * zDim + CONDITION_CHANNELS : zDim;
    if (transformer.inChannels() != expected) {
      throw new CheckpointException(
          config
              + ": in_channels "
              + transformer.inChannels()
              + " does not fit "
              + (imageToVideo
                  ? "image-to-video: the noise, the mask and the condition latents are "
                      + zDim
                      + " + "
                      + CONDITION_CHANNELS
                      + " + "
                      + zDim
                      + " = "
                      + expected
                  : "text-to-video: the noise latents are the VAE's z_dim " + zDim));
    }
  }

  /**
   * The image encoder's width must be the transformer's {@code image_dim}, and its processor must
   * make images of the encoder's size.
   */
  private static void checkImageEncoder(DiffusersDirectory dir, Path transformer, int imageDim) {
    Path encoderConfig = dir.component(IMAGE_ENCODER).configFile();
    ClipVisionConfig clip = ClipVisionConfig.read(encoderConfig);
    if (clip.hiddenSize() != imageDim) {
      throw new CheckpointException(
          transformer
              + ": image_dim "
              + imageDim
              + " does not match the image encoder's hidden_size "
              + clip.hiddenSize()
              + " ("
              + encoderConfig
              + ")");
    }
    Path processorConfig = dir.component(IMAGE_PROCESSOR).configFile();
    ClipImageProcessor processor = ClipImageProcessor.read(processorConfig);
    if (processor.cropHeight() != clip.imageSize() || processor.cropWidth() != clip.imageSize()) {
      throw new CheckpointException(
          processorConfig
              + ": crop_size "
              + processor.cropHeight()
              + "x"
              + processor.cropWidth()
              + " must be the image encoder's image_size "
              + clip.imageSize()
              + " (do_center_crop on)");
    }
  }

  /** The low-noise expert of a two-expert (Wan2.2 A14B) checkpoint. */
  static final String SECOND_EXPERT = "transformer_2";

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
   * Refuses every pipeline attribute of {@code model_index.json} the Wan import does not implement:
   * a Wan2.2 checkpoint loaded as Wan2.1 would generate without a word, and wrongly.
   *
   * @return whether {@code expand_timesteps} is true (per-token timesteps, the TI2V layout)
   */
  private static boolean checkAttributes(Path index, DiffusersDirectory dir) {
    boolean perToken = false;
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
          perToken = value.booleanValue();
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
    return perToken;
  }

  /** A Wan text-to-video card (tasks t2v and t2i) over the given components and recipe. */
  public static ModelCard card(
      String modelId,
      Map<String, ComponentSpec> components,
      RecipeSpec recipe,
      GenerationDefaults defaults) {
    return card(modelId, components, recipe, defaults, TaskType.T2V);
  }

  /**
   * A Wan card over the given components and recipe for {@code task}: {@link TaskType#T2V} (which
   * also serves t2i, one frame), {@link TaskType#I2V} or {@link TaskType#TI2V}. Image-to-video
   * encodes the image with the CLIP encoder when the card has one, and the condition video with the
   * VAE, before denoising; TI2V encodes its optional image with the VAE as the first latent frame.
   */
  public static ModelCard card(
      String modelId,
      Map<String, ComponentSpec> components,
      RecipeSpec recipe,
      GenerationDefaults defaults,
      TaskType task) {
    if (task != TaskType.T2V && task != TaskType.I2V && task != TaskType.TI2V) {
      throw new IllegalArgumentException(
          "a Wan card serves t2v, i2v or ti2v, not " + task.wireName());
    }
    Map<String, LoopSpec> loops = new LinkedHashMap<>();
    loops.put(
        TEXT_ENCODE,
        new LoopSpec(TEXT_ENCODE, WorkKind.ENCODER_CHUNK, List.of("tokenizer", "text_encoder")));
    if (components.containsKey(IMAGE_ENCODER)) {
      loops.put(
          IMAGE_ENCODE,
          new LoopSpec(
              IMAGE_ENCODE, WorkKind.ENCODER_CHUNK, List.of(IMAGE_PROCESSOR, IMAGE_ENCODER)));
    }
    if (task == TaskType.I2V || task == TaskType.TI2V) {
      loops.put(VAE_ENCODE, new LoopSpec(VAE_ENCODE, WorkKind.VAE_TILE, List.of("vae")));
    }
    List<String> denoise =
        components.containsKey(SECOND_EXPERT)
            ? List.of("transformer", SECOND_EXPERT, "scheduler")
            : List.of("transformer", "scheduler");
    loops.put(DENOISE, new LoopSpec(DENOISE, WorkKind.DIFFUSION_STEP, denoise));
    loops.put(VAE_DECODE, new LoopSpec(VAE_DECODE, WorkKind.VAE_TILE, List.of("vae")));
    List<String> program = List.copyOf(loops.keySet());
    Map<TaskType, List<String>> capabilities =
        task == TaskType.T2V
            ? Map.of(TaskType.T2V, program, TaskType.T2I, program)
            : Map.of(task, program);
    // Every component runs in every task the card serves; none is optional.
    Map<String, CheckpointManifest.Requirement> manifest = new LinkedHashMap<>();
    for (String id : components.keySet()) {
      manifest.put(id, new CheckpointManifest.Requirement(capabilities.keySet(), Set.of()));
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
            capabilities,
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
      case IMAGE_ENCODER -> ComponentKind.IMAGE_ENCODER;
      case IMAGE_PROCESSOR -> ComponentKind.IMAGE_PROCESSOR;
      default -> throw new IllegalArgumentException("not a Wan component: " + id);
    };
  }
}
