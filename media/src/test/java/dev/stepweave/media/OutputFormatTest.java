package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import javax.imageio.ImageIO;
import javax.imageio.ImageReader;
import javax.imageio.stream.ImageInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The extension → format mapping, and each format's pixels and metadata read back. */
class OutputFormatTest {
  @TempDir Path tmp;

  private static final String JSON = "{\"prompt\":\"a red ball — ünïcode\",\"seed\":42}";

  @Test
  void theExtensionNamesTheFormatInAnyCase() {
    assertEquals(OutputFormat.MP4, OutputFormat.forFile(Path.of("a/b.mp4")));
    assertEquals(OutputFormat.MP4, OutputFormat.forFile(Path.of("B.MP4")));
    assertEquals(OutputFormat.GIF, OutputFormat.forFile(Path.of("x.gif")));
    assertEquals(OutputFormat.PNG, OutputFormat.forFile(Path.of("x.Png")));
    assertTrue(OutputFormat.PNG.oneFrame());
    assertFalse(OutputFormat.GIF.oneFrame());
  }

  @Test
  void otherExtensionsAreRefusedNamingThem() {
    assertEquals(
        "output x.avi has unknown extension .avi (formats: .mp4, .gif, .png)",
        assertThrows(IllegalArgumentException.class, () -> OutputFormat.forFile(Path.of("x.avi")))
            .getMessage());
    assertEquals(
        "output x.webp is .webp, which Stepweave cannot encode (formats: .mp4, .gif, .png)",
        assertThrows(IllegalArgumentException.class, () -> OutputFormat.forFile(Path.of("x.webp")))
            .getMessage());
    assertEquals(
        "output x.webm is .webm, which Stepweave does not encode (formats: .mp4, .gif, .png)",
        assertThrows(IllegalArgumentException.class, () -> OutputFormat.forFile(Path.of("x.webm")))
            .getMessage());
    assertEquals(
        "output out has no extension (formats: .mp4, .gif, .png)",
        assertThrows(IllegalArgumentException.class, () -> OutputFormat.forFile(Path.of("out")))
            .getMessage());
  }

  @Test
  void mp4KeepsItsMetadata() throws IOException {
    Tensor clip = SyntheticClips.gradientsAndShapes(5, 32, 48);
    Path file = tmp.resolve("clip.mp4");
    OutputFormat.MP4.write(file, clip, 8, JSON);
    var back = OutputMetadata.read(file);
    assertEquals(OutputFormat.MP4, back.format());
    assertEquals(Optional.of(JSON), back.metadataJson());
    // Still the same video.
    assertTrue(Psnr.between(clip, Mp4Reader.read(file).frames()) > 30);
  }

  @Test
  void pngKeepsItsMetadataAndPixels() throws IOException {
    Tensor frame = SyntheticClips.gradientsAndShapes(1, 16, 24);
    Path file = tmp.resolve("one.png");
    OutputFormat.PNG.write(file, frame, 8, JSON);
    var back = OutputMetadata.read(file);
    assertEquals(OutputFormat.PNG, back.format());
    assertEquals(Optional.of(JSON), back.metadataJson());
    var image = ImageIO.read(file.toFile());
    assertEquals(24, image.getWidth());
    assertEquals(16, image.getHeight());
  }

  @Test
  void aPngTakesOneFrameOnly() {
    Tensor clip = SyntheticClips.gradientsAndShapes(5, 16, 16);
    Path file = tmp.resolve("five.png");
    assertEquals(
        "a .png holds one frame, got 5",
        assertThrows(
                IllegalArgumentException.class, () -> OutputFormat.PNG.write(file, clip, 8, JSON))
            .getMessage());
    assertFalse(Files.exists(file));
  }

  @Test
  void gifHoldsEveryFrameLoopingWithItsMetadata() throws IOException {
    Tensor clip = SyntheticClips.gradientsAndShapes(5, 32, 32);
    Path file = tmp.resolve("clip.gif");
    OutputFormat.GIF.write(file, clip, 10, JSON);
    var back = OutputMetadata.read(file);
    assertEquals(OutputFormat.GIF, back.format());
    assertEquals(
        Optional.of("{\"prompt\":\"a red ball \\u2014 \\u00fcn\\u00efcode\",\"seed\":42}"),
        back.metadataJson());
    try (ImageInputStream in = ImageIO.createImageInputStream(file.toFile())) {
      ImageReader reader = ImageIO.getImageReadersByFormatName("gif").next();
      reader.setInput(in);
      assertEquals(5, reader.getNumImages(true));
      var first = reader.read(0);
      assertEquals(32, first.getWidth());
      // A 256-colour palette keeps a smooth gradient close: compare the first frame's pixels.
      float[] expected = clip.select(0, 0).toFloatArray();
      double err = 0;
      for (int y = 0; y < 32; y++) {
        for (int x = 0; x < 32; x++) {
          int rgb = first.getRGB(x, y);
          int i = (y * 32 + x) * 3;
          err += Math.abs(((rgb >> 16) & 0xff) / 255.0 - expected[i]);
          err += Math.abs(((rgb >> 8) & 0xff) / 255.0 - expected[i + 1]);
          err += Math.abs((rgb & 0xff) / 255.0 - expected[i + 2]);
        }
      }
      assertTrue(err / (32 * 32 * 3) < 0.05, "mean abs error " + err / (32 * 32 * 3));
      reader.dispose();
    }
  }

  @Test
  void aFileWithoutOurMetadataReadsEmptyAndAForeignOneIsRefused() throws IOException {
    Path png = tmp.resolve("plain.png");
    PngWriter.writeImage(png, SyntheticClips.gradientsAndShapes(1, 8, 8).select(0, 0));
    assertEquals(Optional.empty(), OutputMetadata.read(png).metadataJson());
    Path mp4 = tmp.resolve("plain.mp4");
    Mp4Writer.write(mp4, SyntheticClips.gradientsAndShapes(1, 16, 16), 8);
    assertEquals(Optional.empty(), OutputMetadata.read(mp4).metadataJson());
    Path text = Files.writeString(tmp.resolve("notes.mp4"), "hello, world");
    assertEquals(
        text + ": not an MP4, GIF or PNG file",
        assertThrows(IOException.class, () -> OutputMetadata.read(text)).getMessage());
    assertEquals(
        tmp.resolve("none.gif") + ": no such file",
        assertThrows(IOException.class, () -> OutputMetadata.read(tmp.resolve("none.gif")))
            .getMessage());
  }
}
