package dev.stepweave.models.wan.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.tensor.Tensor;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The model {@code stepweave generate} uses when no model is named: a tiny text-to-video model with
 * the Wan architecture (UMT5 text encoder, two Wan DiT experts as in Wan 2.2, the Wan 2.1 VAE,
 * UniPC flow-matching scheduler) that this project trained itself on its synthetic shapes data ("a
 * red ball moving left on a black background"), at 64×64: it draws the background, the object's
 * colour and shape and the direction a caption asks for (docs/training.md has the figures).
 *
 * <p>Its high-noise transformer (8 layers of width 128, trained at σ 0.85–1 only, for the steps at
 * t ≥ 875, where a generation places the object and sets its direction), its low-noise transformer
 * (6 layers, for the rest) and its VAE (4× spatial compression to 8 channels, none in time: it
 * encodes each frame as a still) were trained from fresh weights by {@code stepweave train} with
 * {@code training/configs/embedded-vae-stills.yaml} (on the CPU), {@code
 * embedded-dit-gpu-big6.yaml} and {@code embedded-dit-gpu-hi8.yaml} (on a GPU); {@code
 * docs/training.md} says how to reproduce them. The text encoder stayed at its seeded values, which
 * those runs trained against. It exists so the whole pipeline (tokenizer, text encoder, denoising
 * loop with classifier-free guidance and an expert switch, VAE decode, video writing) can be run
 * and tested anywhere, in seconds on two CPU cores, with no download. Point {@code --model} at a
 * real checkpoint for real videos.
 *
 * <p>The checkpoint is written as a diffusers {@code WanPipeline} directory, file for file what a
 * two-expert Wan download holds (weights stored F32), so the ordinary loaders read it. Its bytes
 * are the same on every machine.
 */
public final class EmbeddedWan {
  /**
   * Version of the generated files; part of the directory name, so a change to any dimension, seed,
   * initialisation or vocabulary must bump it (old copies are then simply ignored).
   */
  public static final String FORMAT = "wan21-embedded-v6";

  /** The captions the model was trained on, as notes and help texts show them. */
  public static final String CAPTIONS =
      "a {red|green|blue|yellow|white} {ball|square} moving {left|right|up|down} on a"
          + " {black|gray|purple} background";

  /** The note the CLI prints when it falls back to this model. */
  public static final String NOTE =
      "the embedded tiny model, trained on captions like '"
          + "a red ball moving left on a black background' ("
          + CAPTIONS
          + "), 64x64; for other videos pass --model with a Wan2.1-T2V-1.3B-Diffusers folder";

  /** The model id on the embedded card. */
  public static final String MODEL_ID = "wan21-embedded";

  /**
   * Request settings: the size and length the model was trained at (64×64, 9 frames, played at 8
   * fps) and the sampling chosen by judging its generations (8 UniPC steps, guidance 3: 0.979 of
   * the attributes right on 24 random captions; 0.990 at guidance 5, 0.979 at 6 and at 16 steps,
   * all within one attribute of 96; docs/training.md). Load the model with {@link
   * #MAX_SEQUENCE_LENGTH} too.
   */
  public static final GenerationDefaults DEFAULTS = new GenerationDefaults(64, 64, 9, 8, 8, 3.0);

  /**
   * Text length to pad prompts to for this model. The reference pipeline's 512 is pointless for a
   * word-level vocabulary and costs seconds here: the text encoder's and every cross-attention's
   * work grows with it.
   */
  public static final int MAX_SEQUENCE_LENGTH = 64;

  private EmbeddedWan() {}

  /**
   * Fresh weights for the {@code component} ("transformer" or "vae") of a checkpoint whose config
   * for it is {@code config}, laid out and initialised as the embedded checkpoint's are, from
   * {@code seed}: what a training run starts from when it trains a component from scratch, at the
   * embedded dimensions or others.
   *
   * @throws IllegalArgumentException naming the component when it is neither
   */
  public static Map<String, Tensor> initialWeights(String component, JsonNode config, long seed) {
    List<TensorSpec> specs =
        switch (component) {
          case "transformer" -> TransformerLayout.tensors(config);
          case "vae" -> VaeLayout.tensors(config);
          default ->
              throw new IllegalArgumentException(
                  "no embedded layout for component '" + component + "' (transformer or vae)");
        };
    SeededValues values = new SeededValues(seed);
    Map<String, Tensor> out = new LinkedHashMap<>();
    specs.forEach(spec -> out.put(spec.name(), values.materialise(spec)));
    return out;
  }

  /**
   * The embedded model's checkpoint directory under the default cache root, created on first use.
   *
   * @see #defaultCacheRoot()
   */
  public static Path ensure() {
    return ensure(defaultCacheRoot());
  }

  /**
   * The embedded model's checkpoint directory, {@code cacheRoot/models/}{@value #FORMAT}, written
   * if no complete copy is there yet. Safe to call concurrently from threads and processes: a
   * directory is only ever seen complete or not at all, and a crash part-way leaves nothing that is
   * later read.
   *
   * @throws java.io.UncheckedIOException naming the directory when it cannot be written
   */
  public static Path ensure(Path cacheRoot) {
    Path dir = cacheRoot.resolve("models").resolve(FORMAT);
    return AtomicDirectory.ensure(dir, EmbeddedCheckpoint::writeTo, FORMAT);
  }

  /**
   * Where Stepweave caches files: {@code $STEPWEAVE_HOME} if set, else {@code
   * $XDG_CACHE_HOME/stepweave}, else {@code ~/.cache/stepweave}.
   */
  public static Path defaultCacheRoot() {
    return cacheRoot(System.getenv(), Path.of(System.getProperty("user.home")));
  }

  static Path cacheRoot(Map<String, String> env, Path home) {
    String stepweaveHome = env.get("STEPWEAVE_HOME");
    if (stepweaveHome != null && !stepweaveHome.isBlank()) {
      return Path.of(stepweaveHome);
    }
    String xdgCache = env.get("XDG_CACHE_HOME");
    if (xdgCache != null && !xdgCache.isBlank()) {
      return Path.of(xdgCache, "stepweave");
    }
    return home.resolve(".cache").resolve("stepweave");
  }
}
