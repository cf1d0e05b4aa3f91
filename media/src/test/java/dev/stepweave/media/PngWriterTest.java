package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PngWriterTest {
  @TempDir Path dir;

  @Test
  void framesBecomeNumberedPngsWithRoundedValues() throws IOException {
    Tensor clip = SyntheticClips.gradientsAndShapes(3, 12, 20);
    Path frames = dir.resolve("frames");
    PngWriter.writeFrames(frames, clip);
    assertEquals(3, Mp4RoundTripTest.entries(frames));
    for (int f = 0; f < 3; f++) {
      assertPixelsMatch(clip.select(0, f), frames.resolve(PngWriter.frameFileName(f)));
    }
    assertEquals(1, Mp4RoundTripTest.entries(dir));
  }

  @Test
  void singleImageIsWrittenAndClamped() throws IOException {
    Tensor pixels = SyntheticClips.pixelNoise(1, 5, 7, 9).select(0, 0).toF32();
    pixels.setFloat(1.7f, 0, 0, 0);
    pixels.setFloat(-0.2f, 0, 0, 1);
    Path file = dir.resolve("image.png");
    PngWriter.writeImage(file, pixels);
    BufferedImage image = ImageIO.read(file.toFile());
    assertEquals(0xff0000, image.getRGB(0, 0) & 0xffff00);
    pixels.setFloat(1f, 0, 0, 0);
    pixels.setFloat(0f, 0, 0, 1);
    assertPixelsMatch(pixels, file);
  }

  @Test
  void nonEmptyFramesDirectoryIsRefused() throws IOException {
    Path frames = Files.createDirectory(dir.resolve("frames"));
    Files.writeString(frames.resolve("keep.txt"), "mine");
    IOException e =
        assertThrows(
            IOException.class,
            () -> PngWriter.writeFrames(frames, SyntheticClips.greyNoise(1, 4, 4, 1)));
    assertTrue(e.getMessage().contains(frames.toString()), e.getMessage());
    assertEquals(1, Mp4RoundTripTest.entries(frames));
  }

  private static void assertPixelsMatch(Tensor expected, Path png) throws IOException {
    BufferedImage image = ImageIO.read(png.toFile());
    assertEquals(expected.dim(0), image.getHeight());
    assertEquals(expected.dim(1), image.getWidth());
    for (int y = 0; y < image.getHeight(); y++) {
      for (int x = 0; x < image.getWidth(); x++) {
        int rgb = image.getRGB(x, y);
        int[] channels = {(rgb >> 16) & 0xff, (rgb >> 8) & 0xff, rgb & 0xff};
        for (int c = 0; c < 3; c++) {
          assertEquals(expected.getFloat(y, x, c) * 255f, channels[c], 0.5f);
        }
      }
    }
  }
}
