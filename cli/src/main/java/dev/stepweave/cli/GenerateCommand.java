package dev.stepweave.cli;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.extend.RegisteredAdapter;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code stepweave generate}: the main job. */
@Command(
    name = "generate",
    mixinStandardHelpOptions = true,
    description = {
      "Generates a video (or, with --frames 1, an image) from a prompt, or one per line of a"
          + " --prompts file, and writes it in the format the output's extension names, with the"
          + " prompt, seed and settings in the file's metadata (stepweave info FILE shows them).",
      "",
      "Without --model it uses the small Wan-architecture model embedded in Stepweave, which"
          + " this project trained on its synthetic shapes data, on captions of the form '"
          + EmbeddedWan.CAPTIONS
          + "' (it draws their background and colour, not yet their shape or motion). For other"
          + " videos download Wan-AI/Wan2.1-T2V-1.3B-Diffusers and pass its folder with --model.",
      "Settings left out come from the model card's defaults (the embedded model: 64x64,"
          + " 9 frames at 8 fps, 8 steps; Wan 2.1: 832x480, 81 frames at 16 fps, 50 steps)."
          + " Every setting is checked against the card before the model loads: a bad one is one"
          + " line and exit code 2, and nothing is written.",
      ""
    })
final class GenerateCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Mixin GenerationOptions options;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    GenerationOptions.Plan plan = options.plan(err);
    long loadStart = System.nanoTime();
    try (WanModel wan = options.load(plan);
        Engine engine = options.engine(wan, err)) {
      printModel(out, wan, Duration.ofNanos(System.nanoTime() - loadStart));
      for (GenerationOptions.Job job : plan.jobs()) {
        Request request = job.request();
        if (plan.batch()) {
          out.printf(
              Locale.ROOT,
              "prompt  %d of %d: %s%n",
              job.index(),
              plan.jobs().size(),
              request.prompt());
        }
        printRequest(out, wan, engine, request);
        options.imageSummary(request).ifPresent(out::println);
        FrameStream frames = FrameStream.forJob(job);
        GenerationResult result = run(engine, request, err, frames);
        options.writeOutputs(result, job, wan.samplerFor(request), frames);
        result
            .loopTimings()
            .forEach(
                (loop, t) -> out.printf(Locale.ROOT, "  %-12s %8.2f s%n", loop, t.toNanos() / 1e9));
        result.loopResults().values().stream()
            .flatMap(r -> r.report().entrySet().stream())
            .forEach(e -> out.printf(Locale.ROOT, "  %-28s %d%n", e.getKey(), e.getValue()));
        if (!result.recipeOverrides().isEmpty()) {
          out.println("recipe overridden: " + String.join(", ", result.recipeOverrides()));
        }
        out.println("wrote " + job.target().file().toAbsolutePath());
      }
      return StepweaveCli.ExitCodes.OK;
    }
  }

  /**
   * Runs one request to its end with a progress display; an interrupt (Ctrl-C) cancels it at the
   * next step boundary.
   */
  static GenerationResult run(Engine engine, Request request, PrintWriter err) throws Exception {
    return run(engine, request, err, null);
  }

  /** {@link #run(Engine, Request, PrintWriter)}, its frames also coded into {@code frames}. */
  static GenerationResult run(Engine engine, Request request, PrintWriter err, FrameStream frames)
      throws Exception {
    RequestHandle handle = engine.submit(frames == null ? request : FrameStream.asking(request));
    if (frames != null) {
      handle.events().subscribe(frames);
    }
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
    try {
      return handle.result().get();
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
  }

  /** The model's line: its card, precision, backend and load time. */
  static void printModel(PrintWriter out, WanModel wan, Duration load) {
    ModelCard card = wan.card();
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
  }

  /** The request's line, and each adapter it stacks as the engine's registry holds it. */
  static void printRequest(PrintWriter out, WanModel wan, Engine engine, Request r) {
    var p = r.params();
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
    for (AdapterUse use : r.adapters()) {
      // The engine's registry holds exactly the --lora files the request names.
      RegisteredAdapter a = engine.extensions().adapters().get(use.name()).orElseThrow();
      out.printf(
          Locale.ROOT,
          "lora    %s at %s (%s, rank %d, %d targets, sha256 %s, %s)%n",
          a.name(),
          use.scale(),
          a.info().format(),
          a.info().rank(),
          a.info().targets().size(),
          a.version(),
          a.file());
    }
  }
}
