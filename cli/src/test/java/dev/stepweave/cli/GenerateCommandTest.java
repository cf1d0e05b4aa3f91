package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Psnr;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code stepweave generate}: the main job and what each bad input gets. */
class GenerateCommandTest {
  static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  static final Path TINY = GOLDEN.resolve("wan21-tiny");

  @TempDir Path tmp;

  /** Fast settings on the golden checkpoint. */
  private CliHarness generateTiny(String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "generate",
                "a red ball bouncing",
                "--model",
                TINY.toString(),
                "--size",
                "32x32",
                "--frames",
                "5",
                "--steps",
                "2",
                "--seed",
                "3"));
    args.addAll(List.of(extra));
    return CliHarness.run(args.toArray(String[]::new));
  }

  @Test
  void theDefaultModelWritesAnMp4ThatDecodesBackToItsFrames() throws IOException {
    Path mp4 = tmp.resolve("out.mp4");
    Path frames = tmp.resolve("frames");
    Path latents = tmp.resolve("latents.safetensors");
    var r =
        CliHarness.run(
            "generate",
            "a red ball bouncing",
            "-o",
            mp4.toString(),
            "--save-frames",
            frames.toString(),
            "--save-latents",
            latents.toString(),
            "--seed",
            "11");
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().contains("model   wan21-embedded"), r.out());
    assertTrue(r.out().contains("seed 11"), r.out());
    assertTrue(r.out().contains("wrote " + mp4.toAbsolutePath()), r.out());
    for (String loop : List.of("text_encode", "denoise", "vae_decode")) {
      assertTrue(
          r.out().lines().anyMatch(l -> l.strip().startsWith(loop) && l.strip().endsWith(" s")),
          loop + " timing:\n" + r.out());
    }
    // Progress went to stderr as plain lines (no terminal here).
    assertTrue(
        r.err().lines().anyMatch(l -> l.startsWith("denoise") && l.contains("ETA")), r.err());

    Mp4Reader.Video video = Mp4Reader.read(mp4);
    Tensor generated = readPngs(frames);
    assertEquals(generated.dim(0), video.frames().dim(0));
    double psnr = Psnr.between(video.frames(), generated);
    assertTrue(psnr >= 30, "PSNR " + psnr + " dB");
    try (SafetensorsFile f = SafetensorsFile.open(latents)) {
      assertEquals(4, f.info("latents").shape().length);
      assertEquals("11", f.metadata().get("seed"));
    }
  }

  private static Tensor readPngs(Path dir) throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.sorted(Comparator.naturalOrder()).toList();
    }
    var first = ImageIO.read(files.getFirst().toFile());
    int h = first.getHeight();
    int w = first.getWidth();
    float[] data = new float[files.size() * h * w * 3];
    int i = 0;
    for (Path f : files) {
      var img = ImageIO.read(f.toFile());
      for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
          int rgb = img.getRGB(x, y);
          data[i++] = ((rgb >> 16) & 0xff) / 255f;
          data[i++] = ((rgb >> 8) & 0xff) / 255f;
          data[i++] = (rgb & 0xff) / 255f;
        }
      }
    }
    return Tensor.of(data, files.size(), h, w, 3);
  }

  @Test
  void oneFrameMakesAPng() {
    Path png = tmp.resolve("img.png");
    var r =
        CliHarness.run(
            "generate",
            "a cat",
            "--model",
            TINY.toString(),
            "--size",
            "32x48",
            "--frames",
            "1",
            "--steps",
            "2",
            "-o",
            png.toString());
    assertEquals(0, r.exit(), r.err());
    assertTrue(Files.isRegularFile(png));
  }

  /**
   * Each bad input: a one-line error, a non-zero exit (2 for a bad option, 1 for a file that
   * fails), and no output file.
   */
  private void rejected(String expectedFragment, String... args) {
    Path out = tmp.resolve("bad.mp4");
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("-o", out.toString()));
    var r = CliHarness.run(all.toArray(String[]::new));
    assertTrue(r.exit() != 0, "exit 0 for " + all);
    assertEquals(1, r.errorLines(), r.err());
    assertFalse(r.err().contains("\tat "), r.err());
    assertTrue(
        r.err().contains(expectedFragment), "expected '" + expectedFragment + "' in: " + r.err());
    assertFalse(Files.exists(out), "output left behind for " + all);
  }

  @Test
  void badInputsAreOneLineErrorsAndLeaveNothingBehind() throws IOException {
    String m = TINY.toString();
    rejected("prompt is empty", "generate", "", "--model", m);
    rejected(
        "size must be positive multiples of 16, got 100x100",
        "generate",
        "x",
        "--model",
        m,
        "--size",
        "100x100");
    rejected("size must be WIDTHxHEIGHT", "generate", "x", "--model", m, "--size", "big");
    rejected("frames must be 4k+1", "generate", "x", "--model", m, "--frames", "8");
    rejected(
        "steps must be between 1 and 1000, got 0", "generate", "x", "--model", m, "--steps", "0");
    rejected(
        "steps must be between 1 and 1000, got 5000",
        "generate",
        "x",
        "--model",
        m,
        "--steps",
        "5000");
    rejected(
        "guidance must be a finite number >= 0, got -2.0",
        "generate",
        "x",
        "--model",
        m,
        "--guidance",
        "-2");
    rejected(
        "model directory not found", "generate", "x", "--model", tmp.resolve("nope").toString());
    rejected(
        "unknown setting 'denoise.cfg_scale'",
        "generate",
        "x",
        "--model",
        m,
        "--set",
        "denoise.cfg_scale=2");
    rejected(
        "unknown precision 'fp8' (available: bf16, f32)",
        "generate",
        "x",
        "--model",
        m,
        "--precision",
        "fp8");
    rejected(
        "--memory-headroom must be a non-negative number of GiB, got -1.0",
        "generate",
        "x",
        "--model",
        m,
        "--memory-headroom",
        "-1");
    rejected(
        "unknown expert residency 'fast' (available: resident, swap, auto)",
        "generate",
        "x",
        "--model",
        m,
        "--experts",
        "fast");
    // A checkpoint without its VAE.
    Path noVae = copy(TINY, tmp.resolve("novae"));
    deleteTree(noVae.resolve("vae"));
    rejected("component 'vae' has no folder", "generate", "x", "--model", noVae.toString());
  }

  @Test
  void badAdapterArgumentsAreOneLineErrorsAndLeaveNothingBehind() throws IOException {
    String m = TINY.toString();
    Path style = Files.writeString(tmp.resolve("style.safetensors"), "x");
    Path notAnAdapter = tmp.resolve("other").resolve("notes.safetensors");
    Files.createDirectories(notAnAdapter.getParent());
    dev.stepweave.tensor.io.Safetensors.write(
        notAnAdapter,
        java.util.Map.of("notes.weight", Tensor.of(new float[] {1}, 1)),
        java.util.Map.of());
    rejected(
        "adapter file not found: " + tmp.resolve("nope.safetensors"),
        "generate",
        "x",
        "--model",
        m,
        "--lora",
        tmp.resolve("nope.safetensors") + ":0.5");
    rejected(
        "adapters must be .safetensors files",
        "generate",
        "x",
        "--model",
        m,
        "--lora",
        Files.writeString(tmp.resolve("style.pt"), "x").toString());
    rejected(
        "the scale after ':' must be a number, got 'max'",
        "generate",
        "x",
        "--model",
        m,
        "--lora",
        style + ":max");
    rejected(
        "two adapters named 'style'",
        "generate",
        "x",
        "--model",
        m,
        "--lora",
        style.toString(),
        "--lora",
        Files.writeString(tmp.resolve("other").resolve("style.safetensors"), "x").toString());
    // Refused by the model when the registry inspects it, before anything runs.
    rejected(
        notAnAdapter.toString(), "generate", "x", "--model", m, "--lora", notAnAdapter.toString());
  }

  @Test
  void aBlockCacheRunsAndReportsWhatItSkipped() {
    Path out = tmp.resolve("cached.mp4");
    var r =
        generateTiny(
            "--cache",
            "fbcache",
            "--cache-set",
            "threshold=10",
            "--cache-set",
            "warmup_steps=1",
            "-o",
            out.toString());
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().contains("fbcache.skipped_blocks"), r.out());
    assertTrue(Files.isRegularFile(out));
  }

  @Test
  void blockCacheRefusalsAreOneLineErrors() {
    String m = TINY.toString();
    rejected(
        "an exact request refuses plugin 'dbcache'",
        "generate",
        "x",
        "--model",
        m,
        "--cache",
        "dbcache",
        "--exact");
    rejected(
        "fbcache.threshold must be in 0.0..10.0, got -1",
        "generate",
        "x",
        "--model",
        m,
        "--cache",
        "fbcache",
        "--cache-set",
        "threshold=-1");
    rejected(
        "plugin 'teacache' is not enabled on this deployment (enabled: dbcache, fbcache, stepcache)",
        "generate",
        "x",
        "--model",
        m,
        "--cache",
        "teacache");
  }

  @Test
  void anUnwritableOutputFailsBeforeAnyWork() {
    Path out = tmp.resolve("no-such-dir").resolve("out.mp4");
    var r = generateTiny("-o", out.toString());
    assertEquals(1, r.exit());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(r.err().contains(out.getParent().toString()), r.err());
    assertFalse(r.out().contains("model "), "the model was loaded before the path was checked");
    assertFalse(Files.exists(out));
  }

  @Test
  void aCardsRecipeRefusesOtherStepsUnlessOverridden() throws IOException {
    Path ckpt = copy(TINY, tmp.resolve("distilled"));
    String card =
        dev.stepweave.core.card.CardJson.toJson(
            dev.stepweave.models.wan.WanCards.card(
                "tiny-4step",
                dev.stepweave.models.wan.WanCards.importDiffusers(
                        dev.stepweave.tensor.io.DiffusersDirectory.open(ckpt))
                    .components(),
                new dev.stepweave.core.card.RecipeSpec(
                    "dmd2",
                    List.of("wan21-tiny"),
                    "test",
                    "denoise",
                    "unipc",
                    4,
                    null,
                    dev.stepweave.core.card.ConsistencyRung.C1),
                new dev.stepweave.core.card.GenerationDefaults(32, 32, 5, 8, 4, 5.0)));
    Files.writeString(ckpt.resolve("card.json"), card);
    Path out = tmp.resolve("refused.mp4");
    var r =
        CliHarness.run(
            "generate", "x", "--model", ckpt.toString(), "--steps", "6", "-o", out.toString());
    assertEquals(StepweaveCli.ExitCodes.USAGE, r.exit());
    assertFalse(r.out().contains("model "), "refused after the load:\n" + r.out());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(
        r.err().contains("model 'tiny-4step' (recipe 'dmd2') refuses steps 6 (recipe assumes 4)"),
        r.err());
    assertFalse(Files.exists(out));
    var ok =
        CliHarness.run(
            "generate",
            "x",
            "--model",
            ckpt.toString(),
            "--steps",
            "6",
            "--override-recipe",
            "-o",
            out.toString());
    assertEquals(0, ok.exit(), ok.err());
    assertTrue(ok.out().contains("recipe overridden: steps 6 (recipe assumes 4)"), ok.out());
    // Its own defaults (4 steps) need no override.
    assertEquals(
        0,
        CliHarness.run(
                "generate", "x", "--model", ckpt.toString(), "-o", tmp.resolve("ok.mp4").toString())
            .exit());
  }

  private static Path copy(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path src : files.sorted().toList()) {
        Path dst = to.resolve(from.relativize(src).toString());
        if (Files.isDirectory(src)) {
          Files.createDirectories(dst);
        } else {
          Files.copy(src, dst);
          dst.toFile().setWritable(true);
        }
      }
    }
    return to;
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
