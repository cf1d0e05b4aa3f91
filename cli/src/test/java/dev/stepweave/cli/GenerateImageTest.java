package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code generate --image} (and {@code bench generate}, which shares the options): every refusal.
 */
class GenerateImageTest {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  @TempDir Path tmp;

  /** A small RGB PNG written here. */
  static Path png(Path file, int w, int h) throws IOException {
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    for (int y = 0; y < h; y++) {
      for (int x = 0; x < w; x++) {
        img.setRGB(x, y, ((x * 255 / w) << 16) | ((y * 255 / h) << 8) | 128);
      }
    }
    assertTrue(ImageIO.write(img, "png", file.toFile()));
    return file;
  }

  /**
   * Runs {@code args} plus an output path and checks the refusal: one line containing {@code
   * expected}, a non-zero exit, no output file; {@code beforeLoad} when it must come before the
   * model loads.
   */
  private void rejected(String expected, boolean beforeLoad, String... args) {
    Path out = tmp.resolve("out.mp4");
    List<String> all = new ArrayList<>(Arrays.asList(args));
    all.addAll(List.of("-o", out.toString()));
    var r = CliHarness.run(all.toArray(String[]::new));
    assertEquals(StepweaveCli.ExitCodes.USAGE, r.exit(), r.err());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(r.err().contains(expected), "expected '" + expected + "' in: " + r.err());
    assertFalse(r.err().contains("\tat "), r.err());
    if (beforeLoad) {
      assertFalse(r.out().contains("model "), "the model was loaded first:\n" + r.out());
    }
    assertFalse(Files.exists(out), "output left behind for " + all);
  }

  @Test
  void anImageToATextToVideoModelIsRefusedNamingItsTasks() throws IOException {
    String image = png(tmp.resolve("first.png"), 48, 32).toString();
    rejected(
        "model 'wan21-tiny' takes no input image (it serves t2i, t2v); --image needs an"
            + " image-to-video model",
        false,
        "generate",
        "a red ball",
        "--model",
        TINY.toString(),
        "--size",
        "32x32",
        "--frames",
        "5",
        "--steps",
        "1",
        "--image",
        image);
    rejected(
        "model 'wan21-tiny' takes no input image (it serves t2i, t2v)",
        false,
        "bench",
        "generate",
        "a red ball",
        "--model",
        TINY.toString(),
        "--size",
        "32x32",
        "--frames",
        "5",
        "--steps",
        "1",
        "--repeat",
        "1",
        "--image",
        image);
  }

  @Test
  void badImageFilesAreOneLineErrorsNamingTheFileBeforeTheModelLoads() throws IOException {
    String m = TINY.toString();
    Path missing = tmp.resolve("missing.png");
    rejected(
        missing + ": no such image file",
        true,
        "generate",
        "x",
        "--model",
        m,
        "--image",
        missing.toString());
    Path text = Files.writeString(tmp.resolve("notes.png"), "not an image");
    rejected(
        text + ": not a PNG, JPEG or WebP image",
        true,
        "generate",
        "x",
        "--model",
        m,
        "--image",
        text.toString());
    Path empty = Files.write(tmp.resolve("empty.png"), new byte[0]);
    rejected(
        empty + ": empty file", true, "generate", "x", "--model", m, "--image", empty.toString());
    byte[] whole = Files.readAllBytes(png(tmp.resolve("whole.png"), 16, 16));
    Path truncated = Files.write(tmp.resolve("cut.png"), Arrays.copyOf(whole, whole.length / 2));
    rejected(
        truncated + ": unreadable image",
        true,
        "generate",
        "x",
        "--model",
        m,
        "--image",
        truncated.toString());
    BufferedImage gif = new BufferedImage(4, 4, BufferedImage.TYPE_INT_RGB);
    Path gifFile = tmp.resolve("anim.gif");
    assertTrue(ImageIO.write(gif, "gif", gifFile.toFile()));
    rejected(
        gifFile + ": gif images are not accepted (PNG, JPEG or WebP)",
        true,
        "bench",
        "generate",
        "x",
        "--model",
        m,
        "--image",
        gifFile.toString());
    rejected(
        "--image makes a video from the image: --frames must be 5 or more",
        true,
        "generate",
        "x",
        "--model",
        m,
        "--frames",
        "1",
        "--image",
        tmp.resolve("whole.png").toString());
  }
}
