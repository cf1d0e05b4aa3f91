package dev.stepweave.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Provenance;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.TaskChoice;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.media.ImageDecoder;
import dev.stepweave.media.InvalidImageException;
import dev.stepweave.media.Mp4Writer;
import dev.stepweave.media.PngWriter;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.WanRequestRules;
import dev.stepweave.models.wan.cache.WanCaches;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * What {@code generate} takes — the prompt, the request's settings, the outputs, the model and the
 * backend — and what it does with them before and after the engine runs, shared with {@code bench
 * generate} so that the benchmark runs exactly the product path.
 */
final class GenerationOptions {

  @Parameters(
      index = "0",
      arity = "0..1",
      paramLabel = "PROMPT",
      description = "What to generate (or give --prompts).")
  String prompt;

  @Option(
      names = "--prompts",
      paramLabel = "FILE",
      description = {
        "A batch: one prompt per line, plain text or a JSON object with prompt and optionally"
            + " negative_prompt and seed; one model load for all. Outputs are named by index and"
            + " seed: out-1-seed42.mp4, ..."
      })
  Path prompts;

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FILE",
      description = {
        "Output file; its extension picks the format: .mp4 (H.264), .gif (animated), .png (one"
            + " frame). Default: out.mp4, or out.png for one frame."
      })
  Path output;

  @Option(names = "--force", description = "Overwrite existing output files.")
  boolean force;

  @Option(
      names = "--model",
      paramLabel = "DIR",
      description = {
        "A diffusers-format Wan checkpoint: Wan2.1 T2V or I2V, Wan2.2 T2V or I2V A14B, Wan2.2"
            + " TI2V-5B (default: the embedded tiny model)."
      })
  Path model;

  @Option(names = "--steps", paramLabel = "N", description = "Denoising steps (1..1000).")
  Integer steps;

  @Option(
      names = "--guidance",
      paramLabel = "G",
      description = "Guidance scale (>= 0; <= 1 disables guidance).")
  Double guidance;

  @Option(
      names = "--seed",
      paramLabel = "S",
      description = "Seed of the starting noise (random if omitted).")
  Long seed;

  @Option(
      names = "--size",
      paramLabel = "WxH",
      description = "Frame size, multiples of 16 (of 32 for Wan2.2 TI2V-5B).")
  String size;

  @Option(names = "--frames", paramLabel = "N", description = "Frame count, 4k+1 (1 for an image).")
  Integer frames;

  @Option(names = "--fps", paramLabel = "N", description = "Frames per second of the video.")
  Integer fps;

  @Option(
      names = "--negative",
      paramLabel = "TEXT",
      description = "Negative prompt.",
      defaultValue = "")
  String negative;

  @Option(
      names = "--sampler",
      paramLabel = "NAME",
      description = "unipc, euler or sde (stochastic; default: the checkpoint's).")
  String sampler;

  @Option(
      names = "--shift",
      paramLabel = "X",
      description = "Flow shift (default: the checkpoint's).")
  Double shift;

  @Option(
      names = "--save-frames",
      paramLabel = "DIR",
      description = "Also write every frame as PNG into DIR.")
  Path saveFrames;

  @Option(
      names = "--save-latents",
      paramLabel = "FILE",
      description = "Also write the final latents (safetensors).")
  Path saveLatents;

  @Option(
      names = "--override-recipe",
      description = "Run settings the model's recipe does not allow (recorded on the artifact).")
  boolean overrideRecipe;

  @Option(
      names = "--set",
      paramLabel = "LOOP.KEY=VALUE",
      description = {
        "Per-loop setting, repeatable, e.g. vae_decode.tile=on, denoise.cfg=zero_star,"
            + " denoise.cfg_batched=true, text_encode.max_sequence_length=256."
      })
  List<String> settings = List.of();

  @Option(
      names = "--cache",
      paramLabel = "NAME",
      description = {
        "Cache to run with: dbcache or fbcache (block caches, cache-dit style) or stepcache"
            + " (TeaCache-style step cache); each alters the output."
      })
  String cache;

  @Option(
      names = "--cache-set",
      paramLabel = "KEY=VALUE",
      description = {
        "Cache parameter, repeatable: fn, bn (dbcache), threshold, warmup_steps,"
            + " max_cached_steps, max_consecutive_cached_steps, taylorseer_order."
      })
  List<String> cacheSettings = List.of();

  @Option(
      names = "--exact",
      description = "Refuse anything that alters the model's output distribution (caches).")
  boolean exact;

  @Option(
      names = "--lora",
      paramLabel = "FILE[:SCALE]",
      description = {
        "An adapter (LoRA, .safetensors) to apply at SCALE (default 1, within -4..4);"
            + " repeatable, stacked in the order given (at most 8)."
      })
  List<String> loras = List.of();

  @Option(
      names = "--image",
      paramLabel = "FILE",
      description = {
        "The first frame of an image-to-video run (PNG, JPEG or WebP); needs a model that serves"
            + " i2v or ti2v. The model resizes it to --size as its reference pipeline does."
      })
  Path image;

  /** The --image file decoded by {@link #plan}, null without --image. */
  private ImageDecoder.Decoded decodedImage;

  @picocli.CommandLine.Mixin BackendOption backendOption;

  @picocli.CommandLine.Mixin DeviceBudget deviceBudget;

  /** One output of the run: its prompt, its seed, its request (checked) and where it goes. */
  record Job(int index, PromptFile.Entry entry, long seed, Request request, OutputTarget target) {}

  /**
   * Everything {@link #plan} checked: the checkpoint, the backend and the jobs.
   *
   * @param batch whether the jobs come from --prompts
   */
  /**
   * @param backendOpen how long opening the backend took (the device's context, libraries and
   *     kernels), for {@code bench generate}'s startup line
   */
  record Plan(
      Path modelDir, Backend backend, List<Job> jobs, boolean batch, Duration backendOpen) {}

  /**
   * Checks every option, prompt and destination before the (long) model load, so bad input costs
   * nothing: the options alone, then each request against the checkpoint's card and configs as the
   * engine will ({@link Preflight}), and each output file; then opens the backend and checks the
   * card's recipe against the precision it computes in.
   */
  Plan plan(PrintWriter err) throws IOException {
    List<PromptFile.Entry> entries = entries();
    if (size != null) {
      parseSize(size);
    }
    parseSettings(settings);
    pluginParams();
    LoraArguments.fileUses(loras);
    if (image != null) {
      if (isImage()) {
        throw new InvalidRequestException(
            Request.IMAGE, "--image makes a video from the image: --frames must be 5 or more");
      }
      decodedImage = decode(image);
    }
    if (prompts != null && (saveFrames != null || saveLatents != null)) {
      throw new InvalidRequestException(
          "--save-frames and --save-latents take one prompt, not --prompts");
    }
    if (saveFrames != null) {
      PngWriter.checkFramesWritable(saveFrames);
    }
    if (saveLatents != null) {
      Mp4Writer.checkWritable(saveLatents);
    }
    deviceBudget.check();
    Path dir = modelDir(err);
    WanRequestRules rules = WanRequestRules.read(dir);
    Extensions caches = caches().build();
    List<Job> jobs = new ArrayList<>();
    for (int i = 0; i < entries.size(); i++) {
      PromptFile.Entry e = entries.get(i);
      long usedSeed = e.seed().orElseGet(this::seedOrRandom);
      Request request = request(rules.card(), e, usedSeed);
      try {
        Preflight.request(request, rules, caches);
      } catch (InvalidRequestException bad) {
        if (e.where().isEmpty()) {
          throw bad;
        }
        // Name the line of the --prompts file.
        throw new InvalidRequestException(
            bad.field().orElse(null), e.where() + ": " + bad.getMessage());
      }
      int frames = request.params().frames();
      Path base = output != null ? output : OutputTarget.defaultFile(frames);
      Path file = prompts == null ? base : OutputTarget.indexed(base, i + 1, usedSeed);
      jobs.add(new Job(i + 1, e, usedSeed, request, OutputTarget.check(file, frames, force)));
    }
    // The recipe is checked against the precision the backend computes in.
    long opening = System.nanoTime();
    Backend backend = backendOption.open(err, Precision.BF16);
    Duration backendOpen = Duration.ofNanos(System.nanoTime() - opening);
    Precision precision = Precision.of(backend.activationDType());
    for (Job job : jobs) {
      Preflight.recipe(job.request(), rules, caches, precision);
    }
    return new Plan(dir, backend, List.copyOf(jobs), prompts != null, backendOpen);
  }

  /** The prompt given, or the --prompts file's; exactly one of the two. */
  private List<PromptFile.Entry> entries() throws IOException {
    if (prompts != null) {
      if (prompt != null) {
        throw new InvalidRequestException("give a PROMPT or --prompts FILE, not both");
      }
      return PromptFile.read(prompts);
    }
    if (prompt == null) {
      throw new InvalidRequestException("give a PROMPT (or --prompts FILE)");
    }
    if (prompt.isBlank()) {
      throw new InvalidRequestException("prompt is empty");
    }
    return List.of(PromptFile.Entry.of(prompt));
  }

  private boolean isImage() {
    return frames != null && frames == 1;
  }

  /**
   * Reads and decodes an input image file.
   *
   * @throws InvalidRequestException naming the file when it is missing, unreadable, too large, or
   *     not a PNG, JPEG or WebP image
   */
  private static ImageDecoder.Decoded decode(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      throw new InvalidRequestException(Request.IMAGE, file + ": no such image file");
    }
    // Checked before reading, so a huge file is refused without being loaded.
    long size = Files.size(file);
    if (size > ImageDecoder.MAX_FILE_BYTES) {
      throw new InvalidRequestException(
          Request.IMAGE,
          file
              + ": "
              + size
              + " bytes, over the "
              + (ImageDecoder.MAX_FILE_BYTES >> 20)
              + " MB limit");
    }
    try {
      return ImageDecoder.decode(Files.readAllBytes(file), file.toString());
    } catch (InvalidImageException e) {
      throw new InvalidRequestException(Request.IMAGE, e.getMessage());
    }
  }

  /**
   * The --image line of the run's summary: the file, its size, format and hash, and what the model
   * does with it; empty without --image.
   */
  Optional<String> imageSummary(Request request) {
    if (decodedImage == null) {
      return Optional.empty();
    }
    var p = request.params();
    return Optional.of(
        String.format(
            Locale.ROOT,
            "image   %s (%dx%d %s, sha256 %s; the model resizes it to %dx%d)",
            image,
            decodedImage.width(),
            decodedImage.height(),
            decodedImage.format(),
            decodedImage.sha256().substring(0, 16),
            p.width(),
            p.height()));
  }

  /** --model, or the embedded model (with a note on what it draws). */
  Path modelDir(PrintWriter err) {
    if (model != null) {
      return model;
    }
    err.println("note: no --model given; using " + EmbeddedWan.NOTE);
    return EmbeddedWan.ensure();
  }

  /** Loads the plan's checkpoint on its backend as --experts and --memory-headroom say. */
  WanModel load(Plan plan) {
    return WanModel.load(plan.modelDir(), plan.backend(), deviceBudget.loadOptions());
  }

  /**
   * The engine generate runs on: the device's memory budget, the CLI's deployed caches, and a
   * registry of the --lora files, each inspected by the model.
   *
   * @throws dev.stepweave.core.extend.InvalidAdapterException naming a file the model refuses
   */
  Engine engine(WanModel wan, PrintWriter err) {
    Extensions deployment =
        caches()
            .adapters(
                AdapterRegistry.open(
                    wan::inspectAdapter,
                    LoraArguments.files(LoraArguments.fileUses(loras)),
                    List.of()))
            .build();
    return new Engine(wan, deviceBudget.apply(EngineConfig.defaults(), wan, err), deployment);
  }

  /** The CLI's deployment: every cache enabled, with its defaults. */
  private static Extensions.Builder caches() {
    return WanCaches.enable(Extensions.builder(), List.copyOf(WanCaches.ALL.keySet()), Map.of());
  }

  /** --seed, or a random one (printed with the request). */
  long seedOrRandom() {
    return seed != null ? seed : new SecureRandom().nextLong() & 0xffffffffL;
  }

  /**
   * The request of {@code job} again, with a fresh id ({@code bench generate} submits it once per
   * run).
   */
  Request freshRequest(ModelCard card, Job job) {
    return request(card, job.entry(), job.seed());
  }

  /**
   * The request the options describe for {@code entry}, with a fresh id; what the entry leaves out
   * comes from the options, what they leave out from the card.
   */
  private Request request(ModelCard card, PromptFile.Entry entry, long usedSeed) {
    GenerationDefaults d = card.defaults();
    int[] wh = size == null ? null : parseSize(size);
    DiffusionParams params =
        new DiffusionParams(
            steps != null ? steps : d.steps(),
            guidance != null ? guidance : d.guidance(),
            usedSeed,
            wh != null ? wh[0] : d.width(),
            wh != null ? wh[1] : d.height(),
            frames != null ? frames : d.frames(),
            fps != null ? fps : d.fps(),
            entry.negativePrompt().orElse(negative),
            Optional.ofNullable(sampler),
            Optional.ofNullable(shift));
    TaskType task =
        decodedImage == null && params.frames() == 1
            ? TaskType.T2I
            : TaskChoice.forVideo(card, decodedImage != null, "--image");
    List<ModalPart> inputs = new ArrayList<>();
    inputs.add(new ModalPart.Text(entry.prompt()));
    if (decodedImage != null) {
      inputs.add(
          new ModalPart.Image(
              decodedImage.width(),
              decodedImage.height(),
              decodedImage.rgb(),
              decodedImage.sha256()));
    }
    return Request.builder(task, params)
        .inputs(inputs)
        .output(saveLatents != null ? OutputSpec.WITH_LATENTS : OutputSpec.DEFAULT)
        .nodeOverrides(parseSettings(settings))
        .overrideRecipe(overrideRecipe)
        .plugins(pluginParams())
        .exact(exact)
        .adapters(
            LoraArguments.fileUses(loras).stream()
                .map(u -> new AdapterUse(u.name(), u.scale()))
                .toList())
        .build();
  }

  /**
   * Writes the job's output with its metadata (and the --save-frames and --save-latents extras)
   * where {@link #plan} checked they can go.
   */
  void writeOutputs(GenerationResult result, Job job, String sampler) throws IOException {
    writeOutputs(result, job, sampler, null);
  }

  /**
   * {@link #writeOutputs(GenerationResult, Job, String)}, finishing the MP4 {@code frames} coded
   * while the video decoded when it holds every frame (else, or when null, coding it here).
   */
  void writeOutputs(GenerationResult result, Job job, String sampler, FrameStream streamed)
      throws IOException {
    Request request = job.request();
    Tensor frames;
    Provenance provenance;
    int videoFps;
    if (request.params().frames() == 1) {
      Artifact.ImageArtifact picture = result.artifact(Artifact.ImageArtifact.class);
      frames = picture.pixels().unsqueeze(0);
      provenance = picture.provenance();
      videoFps = request.params().fps();
    } else {
      Artifact.VideoArtifact video = result.artifact(Artifact.VideoArtifact.class);
      frames = video.frames();
      provenance = video.provenance();
      videoFps = video.fps();
    }
    OutputTarget target = job.target();
    String metadata = GenerationMetadata.of(request, provenance, sampler);
    if (streamed != null && streamed.mp4().awaitFrames(frames.dim(0), STREAM_GRACE)) {
      streamed.mp4().finish(target.file(), videoFps, metadata);
    } else {
      target.format().write(target.file(), frames, videoFps, metadata);
    }
    if (saveFrames != null) {
      PngWriter.writeFrames(saveFrames, frames);
    }
    if (saveLatents != null) {
      Artifact.LatentArtifact latents = result.artifact(Artifact.LatentArtifact.class);
      Map<String, String> meta = new LinkedHashMap<>(latents.provenance().settings());
      meta.put("model", latents.provenance().modelId());
      meta.put("seed", Long.toString(latents.provenance().seed()));
      if (!latents.provenance().adapters().isEmpty()) {
        meta.put("adapters", JSON.writeValueAsString(latents.provenance().adapters()));
      }
      Safetensors.write(saveLatents, Map.of("latents", latents.latents()), meta);
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * How long a finished request's last frame events may still be on their way to the stream (they
   * are delivered on another thread); past it the video is coded from the result instead.
   */
  private static final java.time.Duration STREAM_GRACE = java.time.Duration.ofSeconds(5);

  /** --cache and --cache-set as the request's plugin parameters. */
  private Map<String, Map<String, String>> pluginParams() {
    if (cache == null) {
      if (!cacheSettings.isEmpty()) {
        throw new InvalidRequestException("--cache-set needs --cache NAME");
      }
      return Map.of();
    }
    Map<String, String> params = new HashMap<>();
    for (String kv : cacheSettings) {
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        throw new InvalidRequestException("--cache-set wants KEY=VALUE, got '" + kv + "'");
      }
      params.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    return Map.of(cache, params);
  }

  /** "832x480" → {832, 480}. */
  static int[] parseSize(String s) {
    String[] parts = s.toLowerCase(Locale.ROOT).split("x");
    try {
      if (parts.length == 2) {
        return new int[] {Integer.parseInt(parts[0].strip()), Integer.parseInt(parts[1].strip())};
      }
    } catch (NumberFormatException e) {
      // fall through to the error below
    }
    throw new InvalidRequestException("size must be WIDTHxHEIGHT, e.g. 832x480, got '" + s + "'");
  }

  /** "vae_decode.tile=on" → {vae_decode: {tile: on}}. */
  static Map<String, Map<String, String>> parseSettings(List<String> settings) {
    return parseSettings(settings, "--set", "LOOP");
  }

  /**
   * "dbcache.threshold=0.1" → {dbcache: {threshold: 0.1}}; errors name {@code option} and what
   * comes before the dot ({@code head}).
   */
  static Map<String, Map<String, String>> parseSettings(
      List<String> settings, String option, String head) {
    Map<String, Map<String, String>> out = new HashMap<>();
    for (String s : settings) {
      int dot = s.indexOf('.');
      int eq = s.indexOf('=');
      if (dot <= 0 || eq <= dot + 1) {
        throw new InvalidRequestException(
            option + " wants " + head + ".KEY=VALUE, got '" + s + "'");
      }
      out.computeIfAbsent(s.substring(0, dot), k -> new HashMap<>())
          .put(s.substring(dot + 1, eq), s.substring(eq + 1));
    }
    return out;
  }
}
