package dev.stepweave.media;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Iterator;
import javax.imageio.ImageIO;
import javax.imageio.ImageReader;
import javax.imageio.stream.ImageInputStream;

/**
 * Decodes an input image file (PNG, JPEG or WebP, told apart by content, not by name) into 8-bit
 * RGB, as the reference pipelines' {@code PIL.Image.convert("RGB")} does: palette and grey images
 * expand to RGB, an alpha channel is dropped (not composited), 16-bit samples keep their high byte.
 * Anything else — another format, a truncated or corrupt file, an image over the size limits — is a
 * one-line {@link InvalidImageException} naming what is wrong.
 */
public final class ImageDecoder {
  /** The largest encoded file accepted (a 4K PNG is well under this). */
  public static final int MAX_FILE_BYTES = 50 << 20;

  /** The largest width or height accepted. */
  public static final int MAX_SIDE = 8192;

  private ImageDecoder() {}

  /** A decoded image: {@code width · height · 3} RGB bytes, row-major, and the file's SHA-256. */
  public record Decoded(int width, int height, byte[] rgb, String sha256, String format) {}

  /**
   * @param what how to name the input in errors ("input_reference", a file path)
   * @throws InvalidImageException when the bytes are not a readable PNG, JPEG or WebP image within
   *     the limits
   */
  public static Decoded decode(byte[] file, String what) {
    if (file.length == 0) {
      throw new InvalidImageException(what + ": empty file");
    }
    if (file.length > MAX_FILE_BYTES) {
      throw new InvalidImageException(
          what + ": " + file.length + " bytes, over the " + (MAX_FILE_BYTES >> 20) + " MB limit");
    }
    try (ImageInputStream in = ImageIO.createImageInputStream(new ByteArrayInputStream(file))) {
      Iterator<ImageReader> readers = ImageIO.getImageReaders(in);
      if (!readers.hasNext()) {
        throw new InvalidImageException(what + ": not a PNG, JPEG or WebP image");
      }
      ImageReader reader = readers.next();
      try {
        reader.setInput(in, true, true);
        String format = reader.getFormatName().toLowerCase(java.util.Locale.ROOT);
        if (!format.equals("png") && !format.equals("jpeg") && !format.equals("webp")) {
          throw new InvalidImageException(
              what + ": " + format + " images are not accepted (PNG, JPEG or WebP)");
        }
        int width = reader.getWidth(0);
        int height = reader.getHeight(0);
        if (width > MAX_SIDE || height > MAX_SIDE) {
          throw new InvalidImageException(
              what + ": " + width + "x" + height + " is over the " + MAX_SIDE + " pixel limit");
        }
        BufferedImage image = reader.read(0);
        return new Decoded(width, height, rgb(image), sha256(file), format);
      } finally {
        reader.dispose();
      }
    } catch (IOException | RuntimeException e) {
      if (e instanceof InvalidImageException i) {
        throw i;
      }
      String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      throw new InvalidImageException(
          what + ": unreadable image (" + m.lines().findFirst().orElse("") + ")");
    }
  }

  /** Every pixel as 8-bit RGB, alpha dropped. */
  private static byte[] rgb(BufferedImage image) {
    int w = image.getWidth();
    int h = image.getHeight();
    byte[] out = new byte[w * h * 3];
    var raster = image.getRaster();
    boolean grey =
        raster.getNumBands() <= 2
            && !(image.getColorModel() instanceof java.awt.image.IndexColorModel);
    if (grey) {
      // Java treats grey as linear and getRGB would re-encode it; PIL copies the sample into each
      // channel (16-bit samples keep their high byte).
      int shift = raster.getSampleModel().getSampleSize(0) - 8;
      for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
          byte v = (byte) (raster.getSample(x, y, 0) >> Math.max(0, shift));
          int o = (y * w + x) * 3;
          out[o] = v;
          out[o + 1] = v;
          out[o + 2] = v;
        }
      }
      return out;
    }
    int[] row = new int[w];
    for (int y = 0; y < h; y++) {
      image.getRGB(0, y, w, 1, row, 0, w);
      for (int x = 0; x < w; x++) {
        int p = row[x];
        int o = (y * w + x) * 3;
        out[o] = (byte) (p >> 16);
        out[o + 1] = (byte) (p >> 8);
        out[o + 2] = (byte) p;
      }
    }
    return out;
  }

  private static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK always has SHA-256", e);
    }
  }
}
