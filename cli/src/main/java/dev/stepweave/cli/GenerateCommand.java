package dev.stepweave.cli;

import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.media.Mp4Writer;
import dev.stepweave.core.media.PngWriter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.cache.WanCaches;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.io.Safetensors;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code stepweave generate}: the main job. */
@Command(
    name = "generate",
    mixinStandardHelpOptions = true,
    description = {
      "Generates a video (or, with --frames 1, an image) from a prompt and writes an H.264 MP4"
          + " (PNG for an image).",
      "",
      "Without --model it uses the small Wan-architecture model embedded in Stepweave, whose"
          + " weights are deterministic but UNTRAINED: its output is noise-like. It exists to show"
          + " the whole pipeline working on any machine. For real videos download"
          + " Wan-AI/Wan2.1-T2V-1.3B-Diffusers and pass its folder with --model.",
      "Settings left out come from the model card's defaults (the embedded model: 128x128,"
          + " 9 frames at 8 fps, 8 steps; Wan 2.1: 832x480, 81 frames at 16 fps, 50 steps).",
      ""
    })
final class GenerateCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Parameters(index = "0", paramLabel = "PROMPT", description = "What to generate.")
  String prompt;

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FILE",
      description = "Output file (default: out.mp4, or out.png for one frame).")
  Path output;

  @Option(
      names = "--model",
      paramLabel = "DIR",
      description = "A diffusers-format Wan 2.1 T2V checkpoint.")
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

  @Option(names = "--size", paramLabel = "WxH", description = "Frame size, multiples of 16.")
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
      description = "unipc or euler (default: the checkpoint's).")
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

  @picocli.CommandLine.Mixin BackendOption backendOption;

  @picocli.CommandLine.Mixin DeviceBudget deviceBudget;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (prompt == null || prompt.isBlank()) {
      throw new InvalidRequestException("prompt is empty");
    }
    int[] wh = size == null ? null : parseSize(size);
    Map<String, Map<String, String>> overrides = parseSettings(settings);
    if (frames != null && frames == 1 && output == null) {
      output = Path.of("out.png");
    }
    Path target = output == null ? Path.of("out.mp4") : output;
    // Check every destination before the (long) work starts, so a bad path costs nothing.
    boolean image = frames != null && frames == 1;
    if (image) {
      PngWriter.checkImageWritable(target);
    } else {
      Mp4Writer.checkWritable(target);
    }
    if (saveFrames != null) {
      PngWriter.checkFramesWritable(saveFrames);
    }
    if (saveLatents != null) {
      Mp4Writer.checkWritable(saveLatents);
    }
    deviceBudget.check();

    Path dir = model;
    if (dir == null) {
      dir = EmbeddedWan.ensure();
      err.println(
          "note: no --model given; using the embedded tiny model (untrained: its output is"
              + " noise-like). For real videos pass --model with a Wan2.1-T2V-1.3B-Diffusers folder.");
    }
    Backend backend = backendOption.open(spec.commandLine().getErr(), Precision.BF16);
    long loadStart = System.nanoTime();
    try (WanModel wan = WanModel.load(dir, backend);
        Engine engine =
            new Engine(wan, deviceBudget.apply(EngineConfig.defaults(), wan, err), DEPLOYED)) {
      Duration loadTime = Duration.ofNanos(System.nanoTime() - loadStart);
      ModelCard card = wan.card();
      GenerationDefaults d = card.defaults();
      long usedSeed = seed != null ? seed : new SecureRandom().nextLong() & 0xffffffffL;
      DiffusionParams params =
          new DiffusionParams(
              steps != null ? steps : d.steps(),
              guidance != null ? guidance : d.guidance(),
              usedSeed,
              wh != null ? wh[0] : d.width(),
              wh != null ? wh[1] : d.height(),
              frames != null ? frames : d.frames(),
              fps != null ? fps : d.fps(),
              negative,
              Optional.ofNullable(sampler),
              Optional.ofNullable(shift));
      TaskType task = params.frames() == 1 ? TaskType.T2I : TaskType.T2V;
      Request request =
          new Request(
              UUID.randomUUID().toString(),
              task,
              List.of(new ModalPart.Text(prompt)),
              params,
              new OutputSpec(saveLatents != null, 0),
              overrides,
              overrideRecipe,
              pluginParams(),
              exact);
      printCard(out, card, wan, request, loadTime);
      RequestHandle handle = engine.submit(request);
      Thread cancelOnInterrupt =
          new Thread(
              () -> {
                if (handle.cancel()) {
                  try {
                    handle.result().get();
                  } catch (Exception ignored) {
                    // the run ends cancelled; nothing was written
                  }
                }
              });
      Runtime.getRuntime().addShutdownHook(cancelOnInterrupt);
      handle
          .events()
          .subscribe(
              new ProgressPrinter(err, System.console() != null && System.console().isTerminal()));
      GenerationResult result;
      try {
        result = handle.result().get();
      } catch (ExecutionException e) {
        if (e.getCause() instanceof CancelledException c) {
          throw c;
        }
        throw e.getCause() instanceof Exception ex ? ex : e;
      } finally {
        try {
          Runtime.getRuntime().removeShutdownHook(cancelOnInterrupt);
        } catch (IllegalStateException shuttingDown) {
          // the hook is running: it owns the ending
        }
      }
      writeOutputs(result, target, image);
      result
          .loopTimings()
          .forEach(
              (loop, t) -> out.printf(Locale.ROOT, "  %-11s %8.2f s%n", loop, t.toNanos() / 1e9));
      result.loopResults().values().stream()
          .flatMap(r -> r.report().entrySet().stream())
          .forEach(e -> out.printf(Locale.ROOT, "  %-28s %d%n", e.getKey(), e.getValue()));
      if (!result.recipeOverrides().isEmpty()) {
        out.println("recipe overridden: " + String.join(", ", result.recipeOverrides()));
      }
      out.println("wrote " + target.toAbsolutePath());
      return StepweaveCli.ExitCodes.OK;
    }
  }

  private void writeOutputs(GenerationResult result, Path target, boolean image)
      throws IOException {
    if (image) {
      PngWriter.writeImage(target, result.artifact(Artifact.ImageArtifact.class).pixels());
    } else {
      Artifact.VideoArtifact video = result.artifact(Artifact.VideoArtifact.class);
      Mp4Writer.write(target, video.frames(), video.fps());
      if (saveFrames != null) {
        PngWriter.writeFrames(saveFrames, video.frames());
      }
    }
    if (image && saveFrames != null) {
      PngWriter.writeFrames(
          saveFrames, result.artifact(Artifact.ImageArtifact.class).pixels().unsqueeze(0));
    }
    if (saveLatents != null) {
      Artifact.LatentArtifact latents = result.artifact(Artifact.LatentArtifact.class);
      Map<String, String> meta = new LinkedHashMap<>(latents.provenance().settings());
      meta.put("model", latents.provenance().modelId());
      meta.put("seed", Long.toString(latents.provenance().seed()));
      Safetensors.write(saveLatents, Map.of("latents", latents.latents()), meta);
    }
  }

  private static void printCard(
      PrintWriter out, ModelCard card, WanModel wan, Request r, Duration load) {
    var p = r.params();
    out.printf(
        Locale.ROOT,
        "model   %s (%s; recipe %s, provenance %s; %s on %s; loaded in %.2f s)%n",
        card.modelId(),
        card.family(),
        card.recipe().method(),
        card.recipe().provenance(),
        wan.precision().wireName(),
        wan.backend().name(),
        load.toNanos() / 1e9);
    out.printf(
        Locale.ROOT,
        "request %s %dx%d, %d frame%s at %d fps, %d steps of %s, guidance %s, seed %d%n",
        r.task().wireName(),
        p.width(),
        p.height(),
        p.frames(),
        p.frames() == 1 ? "" : "s",
        p.fps(),
        p.steps(),
        wan.samplerFor(r),
        p.guidance(),
        p.seed());
  }

  /**
   * The CLI's deployment: it enables the block and step caches a user may then pick with --cache.
   */
  private static final Extensions DEPLOYED =
      WanCaches.enable(Extensions.builder(), List.copyOf(WanCaches.ALL.keySet()), Map.of()).build();

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
