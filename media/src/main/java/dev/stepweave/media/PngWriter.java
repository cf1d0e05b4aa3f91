package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import javax.imageio.IIOImage;
import javax.imageio.ImageIO;
import javax.imageio.ImageTypeSpecifier;
import javax.imageio.ImageWriter;
import javax.imageio.metadata.IIOMetadata;
import javax.imageio.metadata.IIOMetadataNode;
import javax.imageio.stream.ImageOutputStream;

/**
 * Writes RGB pixels in [0, 1] as 8-bit sRGB PNG files, atomically: a single image file, or a
 * directory holding one {@code frame_0000.png}, {@code frame_0001.png}, … per video frame.
 */
public final class PngWriter {
  private PngWriter() {}

  /** Fails fast with a one-line message naming {@code file} unless a PNG can be written there. */
  public static void checkImageWritable(Path file) throws IOException {
    AtomicOutput.checkFileWritable(file, "image");
  }

  /**
   * Fails fast with a one-line message naming {@code directory} unless the frames can be written
   * there: the directory must not exist yet, or be empty.
   */
  public static void checkFramesWritable(Path directory) throws IOException {
    AtomicOutput.checkDirectoryWritable(directory, "video frames");
  }

  /** Writes one {@code [H, W, 3]} image. */
  public static void writeImage(Path file, Tensor pixels) throws IOException {
    checkImageWritable(file);
    RgbFrames.requireImage(pixels);
    BufferedImage image = toImage(pixels.toFloatArray(), pixels.dim(0), pixels.dim(1));
    AtomicOutput.writeFile(file, temporary -> writePng(image, temporary));
  }

  /**
   * Writes one {@code [H, W, 3]} image with {@code metadataJson} in an {@code iTXt} chunk whose
   * keyword is {@value OutputMetadata#KEY} (UTF-8, uncompressed).
   */
  public static void writeImage(Path file, Tensor pixels, String metadataJson) throws IOException {
    checkImageWritable(file);
    RgbFrames.requireImage(pixels);
    BufferedImage image = toImage(pixels.toFloatArray(), pixels.dim(0), pixels.dim(1));
    AtomicOutput.writeFile(file, temporary -> writePng(image, temporary, metadataJson));
  }

  /** Writes {@code [F, H, W, 3]} frames as numbered PNG files into a new directory. */
  public static void writeFrames(Path directory, Tensor frames) throws IOException {
    checkFramesWritable(directory);
    RgbFrames.requireVideo(frames);
    AtomicOutput.writeDirectory(
        directory,
        temporary -> {
          for (int f = 0; f < frames.dim(0); f++) {
            BufferedImage image = toImage(RgbFrames.frame(frames, f), frames.dim(1), frames.dim(2));
            writePng(image, temporary.resolve(frameFileName(f)));
          }
        });
  }

  /** The name of frame {@code index} inside a frames directory. */
  public static String frameFileName(int index) {
    return String.format("frame_%04d.png", index);
  }

  static BufferedImage toImage(float[] rgb, int height, int width) {
    BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
    int[] packed = new int[width];
    for (int y = 0; y < height; y++) {
      for (int x = 0; x < width; x++) {
        int i = (y * width + x) * 3;
        packed[x] = (toByte(rgb[i]) << 16) | (toByte(rgb[i + 1]) << 8) | toByte(rgb[i + 2]);
      }
      image.setRGB(0, y, width, 1, packed, 0, width);
    }
    return image;
  }

  private static int toByte(float value) {
    return Math.round(Math.clamp(value, 0f, 1f) * 255f);
  }

  private static void writePng(BufferedImage image, Path file) throws IOException {
    if (!ImageIO.write(image, "png", file.toFile())) {
      throw new IOException("no PNG writer available for " + file);
    }
  }

  private static void writePng(BufferedImage image, Path file, String metadataJson)
      throws IOException {
    ImageWriter writer = ImageIO.getImageWritersByFormatName("png").next();
    try (ImageOutputStream out = ImageIO.createImageOutputStream(file.toFile())) {
      writer.setOutput(out);
      IIOMetadata meta =
          writer.getDefaultImageMetadata(ImageTypeSpecifier.createFromRenderedImage(image), null);
      IIOMetadataNode root = new IIOMetadataNode(PNG_METADATA);
      IIOMetadataNode entry = new IIOMetadataNode("iTXtEntry");
      entry.setAttribute("keyword", OutputMetadata.KEY);
      entry.setAttribute("compressionFlag", "FALSE");
      entry.setAttribute("compressionMethod", "0");
      entry.setAttribute("languageTag", "");
      entry.setAttribute("translatedKeyword", "");
      entry.setAttribute("text", metadataJson);
      IIOMetadataNode itxt = new IIOMetadataNode("iTXt");
      itxt.appendChild(entry);
      root.appendChild(itxt);
      meta.mergeTree(PNG_METADATA, root);
      writer.write(new IIOImage(image, null, meta));
    } finally {
      writer.dispose();
    }
  }

  static final String PNG_METADATA = "javax_imageio_png_1.0";
}
