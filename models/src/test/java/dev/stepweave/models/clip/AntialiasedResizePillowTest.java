package dev.stepweave.models.clip;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The resize of a request's image against Pillow 12.3's own (testdata/pillow-resize, written by
 * scripts/device/pillow_resize.py): noise images down, up and down-one-way-up-the-other, through
 * Lanczos (the Wan I2V pipelines' VAE condition) and bicubic, byte for byte.
 */
class AntialiasedResizePillowTest {
  private static final Path DIR =
      Path.of(System.getProperty("stepweave.golden")).getParent().resolve("pillow-resize");

  private static RgbImage read(String name) throws IOException {
    BufferedImage image = ImageIO.read(DIR.resolve(name).toFile());
    int w = image.getWidth(), h = image.getHeight();
    byte[] rgb = new byte[w * h * 3];
    for (int y = 0; y < h; y++) {
      for (int x = 0; x < w; x++) {
        int p = image.getRGB(x, y);
        int i = (y * w + x) * 3;
        rgb[i] = (byte) (p >> 16);
        rgb[i + 1] = (byte) (p >> 8);
        rgb[i + 2] = (byte) p;
      }
    }
    return new RgbImage(w, h, rgb);
  }

  @ParameterizedTest
  @CsvSource({
    "down, lanczos, LANCZOS",
    "up, lanczos, LANCZOS",
    "mixed, lanczos, LANCZOS",
    "down, bicubic, BICUBIC",
    "up, bicubic, BICUBIC",
    "mixed, bicubic, BICUBIC"
  })
  void resizeEqualsPillows(String cas, String file, AntialiasedResize.Filter filter)
      throws IOException {
    RgbImage in = read("in_" + cas + ".png");
    RgbImage want = read("out_" + cas + "_" + file + ".png");
    RgbImage got =
        AntialiasedResize.resize(
            in, want.width(), want.height(), filter, AntialiasedResize.Rounding.PILLOW);
    assertEquals(want.width(), got.width());
    assertEquals(want.height(), got.height());
    assertArrayEquals(want.rgb(), got.rgb(), cas + " " + file + ": bytes differ from Pillow's");
  }
}
