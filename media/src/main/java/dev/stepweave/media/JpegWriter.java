package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import javax.imageio.ImageIO;

/** One {@code [H, W, 3]} image as JPEG bytes (the JDK's encoder, its default quality): previews. */
public final class JpegWriter {
  private JpegWriter() {}

  public static byte[] encode(Tensor pixels) throws IOException {
    RgbFrames.requireImage(pixels);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (!ImageIO.write(
        PngWriter.toImage(pixels.toFloatArray(), pixels.dim(0), pixels.dim(1)), "jpg", out)) {
      throw new IOException("no JPEG writer available");
    }
    return out.toByteArray();
  }
}
