package dev.stepweave.models.clip;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * A decoded 8-bit RGB image: {@code height} rows of {@code width} pixels, each three bytes R, G, B
 * (unsigned), row-major. Decoding files into this is the caller's concern.
 *
 * @param rgb {@code height · width · 3} bytes; not copied, so the caller must not change them
 */
public record RgbImage(int width, int height, byte[] rgb) {
  private static final int CHANNELS = 3;

  public RgbImage {
    if (width <= 0 || height <= 0) {
      throw new IllegalArgumentException("image size " + width + "x" + height + " is empty");
    }
    if (rgb.length != (long) width * height * CHANNELS) {
      throw new IllegalArgumentException(
          "a "
              + width
              + "x"
              + height
              + " RGB image has "
              + (long) width * height * CHANNELS
              + " bytes, got "
              + rgb.length);
    }
  }

  /** The image held by a host {@code [H, W, 3]} U8 tensor (the golden recordings' layout). */
  public static RgbImage of(Tensor hwc) {
    if (hwc.dtype() != DType.U8
        || hwc.device().kind() != Device.Kind.CPU
        || hwc.rank() != 3
        || hwc.dim(2) != CHANNELS) {
      throw new IllegalArgumentException(
          "an RGB image tensor is a host [H, W, 3] U8 tensor, got "
              + hwc.dtype()
              + " "
              + Arrays.toString(hwc.shape())
              + " on "
              + hwc.device());
    }
    long[] values = hwc.toLongArray();
    byte[] rgb = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      rgb[i] = (byte) values[i];
    }
    return new RgbImage(hwc.dim(1), hwc.dim(0), rgb);
  }

  /** Channel {@code c} of pixel ({@code x}, {@code y}), 0 to 255. */
  public int get(int x, int y, int c) {
    return rgb[(y * width + x) * CHANNELS + c] & 0xff;
  }
}
