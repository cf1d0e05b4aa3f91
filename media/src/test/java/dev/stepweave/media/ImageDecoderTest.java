package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;

/** Input images: what each format decodes to, and the one-line error each bad file gets. */
class ImageDecoderTest {
  private static byte[] encode(BufferedImage image, String format) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (!ImageIO.write(image, format, out)) {
      throw new IllegalStateException("no writer for " + format);
    }
    return out.toByteArray();
  }

  private static BufferedImage pattern(int type) {
    BufferedImage image = new BufferedImage(5, 3, type);
    for (int y = 0; y < 3; y++) {
      for (int x = 0; x < 5; x++) {
        image.setRGB(x, y, 0x80000000 | (x * 50) << 16 | (y * 100) << 8 | 7);
      }
    }
    return image;
  }

  @Test
  void aPngDecodesToItsExactRgbAndAlphaIsDropped() throws IOException {
    byte[] png = encode(pattern(BufferedImage.TYPE_INT_ARGB), "png");
    ImageDecoder.Decoded d = ImageDecoder.decode(png, "input_reference");
    assertEquals(5, d.width());
    assertEquals(3, d.height());
    assertEquals("png", d.format());
    assertEquals(64, d.sha256().length());
    int o = (2 * 5 + 4) * 3;
    assertArrayEquals(
        new byte[] {(byte) 200, (byte) 200, 7}, Arrays.copyOfRange(d.rgb(), o, o + 3));
  }

  @Test
  void greyImagesCopyTheSampleIntoEachChannel() throws IOException {
    BufferedImage grey = new BufferedImage(2, 1, BufferedImage.TYPE_BYTE_GRAY);
    grey.getRaster().setSample(0, 0, 0, 128);
    grey.getRaster().setSample(1, 0, 0, 3);
    ImageDecoder.Decoded d = ImageDecoder.decode(encode(grey, "png"), "g");
    assertArrayEquals(new byte[] {(byte) 128, (byte) 128, (byte) 128, 3, 3, 3}, d.rgb());
  }

  @Test
  void aJpegDecodes() throws IOException {
    ImageDecoder.Decoded d =
        ImageDecoder.decode(encode(pattern(BufferedImage.TYPE_INT_RGB), "jpeg"), "j");
    assertEquals("jpeg", d.format());
    assertEquals(5 * 3 * 3, d.rgb().length);
  }

  @Test
  void badFilesAreOneLineErrorsNamingTheInput() throws IOException {
    assertEquals(
        "input_reference: empty file",
        assertThrows(
                InvalidImageException.class,
                () -> ImageDecoder.decode(new byte[0], "input_reference"))
            .getMessage());
    assertEquals(
        "input_reference: not a PNG, JPEG or WebP image",
        assertThrows(
                InvalidImageException.class,
                () -> ImageDecoder.decode("hello".getBytes(), "input_reference"))
            .getMessage());
    byte[] bmp = encode(pattern(BufferedImage.TYPE_INT_RGB), "bmp");
    assertEquals(
        "x.bmp: bmp images are not accepted (PNG, JPEG or WebP)",
        assertThrows(InvalidImageException.class, () -> ImageDecoder.decode(bmp, "x.bmp"))
            .getMessage());
    byte[] png = encode(pattern(BufferedImage.TYPE_INT_RGB), "png");
    byte[] truncated = Arrays.copyOf(png, png.length / 2);
    var e = assertThrows(InvalidImageException.class, () -> ImageDecoder.decode(truncated, "t"));
    assertEquals(1, e.getMessage().lines().count());
    assertEquals(true, e.getMessage().startsWith("t: unreadable image"), e.getMessage());
  }

  /** Bits written least significant first, as VP8L reads them. */
  private static final class Bits {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private int current;
    private int used;

    Bits put(int value, int count) {
      for (int i = 0; i < count; i++) {
        current |= ((value >> i) & 1) << used;
        if (++used == 8) {
          out.write(current);
          current = 0;
          used = 0;
        }
      }
      return this;
    }

    /** A prefix code of one 8-bit symbol: "simple", one symbol, 8 bits wide; it costs no bits. */
    Bits onlySymbol(int symbol) {
      return put(1, 1).put(0, 1).put(1, 1).put(symbol, 8);
    }

    byte[] bytes() {
      if (used > 0) {
        out.write(current);
        current = 0;
        used = 0;
      }
      return out.toByteArray();
    }
  }

  /**
   * A 1×1 lossless WebP (VP8L) written from the format's specification: the header, no transforms,
   * no colour cache, one prefix-code group whose green, red, blue and alpha codes each hold the one
   * symbol of the pixel (so the pixel itself takes no bits) and whose distance code is unused.
   */
  private static byte[] onePixelWebp(int r, int g, int b) {
    byte[] stream =
        new Bits()
            .put(0, 14) // width - 1
            .put(0, 14) // height - 1
            .put(0, 1) // alpha not used
            .put(0, 3) // version 0
            .put(0, 1) // no transform
            .put(0, 1) // no colour cache
            .put(0, 1) // one prefix-code group
            .onlySymbol(g)
            .onlySymbol(r)
            .onlySymbol(b)
            .onlySymbol(255)
            .put(1, 1)
            .put(0, 1)
            .put(0, 1)
            .put(0, 1) // distance: one 1-bit symbol, 0
            // One unused zero byte after the last bit: the decoder reads a byte ahead.
            .put(0, 8)
            .bytes();
    int chunk = 1 + stream.length;
    int padded = chunk + (chunk & 1);
    java.nio.ByteBuffer file =
        java.nio.ByteBuffer.allocate(20 + padded).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    file.put("RIFF".getBytes(java.nio.charset.StandardCharsets.US_ASCII))
        .putInt(12 + padded)
        .put("WEBPVP8L".getBytes(java.nio.charset.StandardCharsets.US_ASCII))
        .putInt(chunk)
        .put((byte) 0x2f) // the VP8L signature
        .put(stream);
    return file.array();
  }

  @Test
  void aLosslessWebpDecodesToItsPixel() {
    ImageDecoder.Decoded d = ImageDecoder.decode(onePixelWebp(200, 100, 50), "pixel.webp");
    assertEquals("webp", d.format());
    assertEquals(1, d.width());
    assertEquals(1, d.height());
    assertArrayEquals(new byte[] {(byte) 200, 100, 50}, d.rgb());
  }
}
