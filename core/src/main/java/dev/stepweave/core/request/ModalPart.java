package dev.stepweave.core.request;

import java.util.Objects;

/** One typed input of a request. */
public sealed interface ModalPart {

  /**
   * Starting latents for a denoising loop, instead of seeded noise (parity runs against a
   * recording's initial latents; editing workflows).
   */
  record Latents(dev.stepweave.tensor.Tensor latents) implements ModalPart {
    public Latents {
      Objects.requireNonNull(latents, "latents");
    }
  }

  /**
   * A decoded image (the first frame of image-to-video): 8-bit RGB, row-major, three bytes per
   * pixel, and the SHA-256 of the file it came from, which keys every cache of what is computed
   * from it. A product decodes and validates the file (media's {@code ImageDecoder}); the model
   * resizes it to the request's size as its reference pipeline does.
   *
   * @param width pixels per row, 1..{@link #MAX_SIDE}
   * @param height rows, 1..{@link #MAX_SIDE}
   * @param rgb {@code width · height · 3} bytes
   * @param sourceSha256 the hash of the encoded file (or of {@code rgb} when there was none)
   */
  record Image(int width, int height, byte[] rgb, String sourceSha256) implements ModalPart {
    /** The largest width or height an input image may have. */
    public static final int MAX_SIDE = 8192;

    public Image {
      Objects.requireNonNull(rgb, "rgb");
      Objects.requireNonNull(sourceSha256, "sourceSha256");
      if (width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) {
        throw new InvalidRequestException(
            "image",
            "image must be 1.." + MAX_SIDE + " pixels on each side, got " + width + "x" + height);
      }
      if (rgb.length != width * height * 3) {
        throw new IllegalArgumentException(
            "rgb has " + rgb.length + " bytes for a " + width + "x" + height + " RGB image");
      }
    }

    /** The red, green and blue of pixel (x, y), each 0..255. */
    public int channel(int x, int y, int c) {
      return rgb[(y * width + x) * 3 + c] & 0xff;
    }
  }

  /** A text prompt. */
  record Text(String text) implements ModalPart {
    public Text {
      Objects.requireNonNull(text, "text");
    }
  }
}
