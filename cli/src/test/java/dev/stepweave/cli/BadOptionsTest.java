package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each bad option of {@code generate}: checked against the card before the model loads, it gets
 * exactly one line naming it, exit code 2, and nothing written.
 */
class BadOptionsTest {
  static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  static final Path TINY = GOLDEN.resolve("wan21-tiny");
  static final Path TI2V = GOLDEN.resolve("wan22-ti2v-tiny");

  @TempDir Path tmp;

  /** Runs generate on {@code model} with {@code args}; checks the exact error and the rest. */
  private void refused(String message, Path model, String... args) throws Exception {
    List<String> all =
        new ArrayList<>(List.of("generate", "x", "--model", model.toString(), "--backend", "cpu"));
    all.addAll(List.of(args));
    if (!all.contains("-o")) {
      all.addAll(List.of("-o", tmp.resolve("out.mp4").toString()));
    }
    var r = CliHarness.run(all.toArray(String[]::new));
    assertEquals("stepweave: " + message + "\n", r.err(), "for " + all);
    assertEquals(StepweaveCli.ExitCodes.USAGE, r.exit(), "for " + all);
    // The model line comes right after the load: none means the weights were never read.
    assertEquals("", r.out(), "for " + all);
    try (Stream<Path> files = Files.list(tmp)) {
      assertEquals(List.of(), files.toList(), "for " + all);
    }
  }

  @Test
  void badSizes() throws Exception {
    refused("size must be WIDTHxHEIGHT, e.g. 832x480, got 'big'", TINY, "--size", "big");
    refused("size must be positive multiples of 16, got 100x100", TINY, "--size", "100x100");
    // Known only from the checkpoint's configs: Wan2.2 TI2V's 16x VAE needs multiples of 32.
    refused(
        "size 48x32: model 'wan22-ti2v-tiny' needs a width that is a multiple of 32 and a height"
            + " of 32 (the VAE's 16x times the transformer's patch)",
        TI2V,
        "--size",
        "48x32");
  }

  @Test
  void badFramesStepsAndGuidance() throws Exception {
    refused("frames must be 4k+1 (1, 5, 9, …, 81), got 8", TINY, "--frames", "8");
    refused("steps must be between 1 and 1000, got 0", TINY, "--steps", "0");
    refused("steps must be between 1 and 1000, got 5000", TINY, "--steps", "5000");
    refused("guidance must be a finite number >= 0, got -2.0", TINY, "--guidance", "-2");
    refused("fps must be between 1 and 240, got 0", TINY, "--fps", "0");
    refused("sampler must be unipc, euler or sde, got 'ddim'", TINY, "--sampler", "ddim");
  }

  @Test
  void badSettings() throws Exception {
    refused("--set wants LOOP.KEY=VALUE, got 'tile'", TINY, "--set", "tile");
    refused(
        "unknown setting 'denoise.cfg_scale' (known: cfg, cfg_batched, cfg_rescale,"
            + " cfg_zero_init_steps, guidance_2)",
        TINY,
        "--set",
        "denoise.cfg_scale=2");
    refused(
        "unknown loop 'decode' in settings (loops: denoise, text_encode, vae_decode)",
        TINY,
        "--set",
        "decode.tile=on");
    refused(
        "vae_decode tile must be on, off or auto, got 'maybe'",
        TINY,
        "--set",
        "vae_decode.tile=maybe");
    refused(
        "max_sequence_length must be an integer in 1..4096, got '0'",
        TINY,
        "--set",
        "text_encode.max_sequence_length=0");
    refused(
        "denoise.guidance_2 needs a two-expert model; 'wan21-tiny' has one transformer",
        TINY,
        "--set",
        "denoise.guidance_2=3");
  }

  @Test
  void badOutputs() throws Exception {
    Path avi = tmp.resolve("x.avi");
    refused(
        "output " + avi + " has unknown extension .avi (formats: .mp4, .gif, .png)",
        TINY,
        "-o",
        avi.toString());
    Path webp = tmp.resolve("x.webp");
    refused(
        "output " + webp + " is .webp, which Stepweave cannot encode (formats: .mp4, .gif, .png)",
        TINY,
        "-o",
        webp.toString());
    Path png = tmp.resolve("x.png");
    refused(
        "output "
            + png
            + ": a .png holds one frame, the request makes 5 (use .mp4 or .gif, or --frames 1)",
        TINY,
        "--frames",
        "5",
        "-o",
        png.toString());
  }

  @Test
  void promptAndPromptsTogetherOrNeither() throws Exception {
    Path prompts = Files.writeString(tmp.resolve("p.txt"), "a red ball\n");
    var both =
        CliHarness.run(
            "generate", "x", "--prompts", prompts.toString(), "--model", TINY.toString());
    assertEquals("stepweave: give a PROMPT or --prompts FILE, not both\n", both.err());
    assertEquals(StepweaveCli.ExitCodes.USAGE, both.exit());
    var neither = CliHarness.run("generate", "--model", TINY.toString());
    assertEquals("stepweave: give a PROMPT (or --prompts FILE)\n", neither.err());
    assertEquals(StepweaveCli.ExitCodes.USAGE, neither.exit());
    var missing =
        CliHarness.run(
            "generate",
            "--prompts",
            tmp.resolve("none.txt").toString(),
            "--model",
            TINY.toString());
    assertEquals(
        "stepweave: --prompts " + tmp.resolve("none.txt") + ": no such file\n", missing.err());
    assertEquals(StepweaveCli.ExitCodes.USAGE, missing.exit());
    Files.delete(prompts);
  }
}
