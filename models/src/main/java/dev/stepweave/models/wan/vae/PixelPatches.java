package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * Folds {@code p × p} pixel patches into channels before the encoder and unfolds them after the
 * decoder (the Wan 2.2 VAE's {@code patch_size}). The order is the reference's: channel {@code c·p²
 * + dx·p + dy} holds the pixel at row offset {@code dy}, column offset {@code dx} of channel {@code
 * c}'s patch (the column offset varies slower). A size of 1 changes nothing.
 */
final class PixelPatches {
  private final Backend backend;
  private final int size;

  PixelPatches(Backend backend, int size) {
    this.backend = backend;
    this.size = size;
  }

  /** {@code [B, C, T, H, W]} → {@code [B, C·p², T, H/p, W/p]}. */
  Tensor fold(Tensor video) {
    if (size == 1) {
      return video;
    }
    int b = video.dim(0);
    int c = video.dim(1);
    int t = video.dim(2);
    int h = video.dim(3);
    int w = video.dim(4);
    if (h % size != 0 || w % size != 0) {
      throw new IllegalArgumentException(
          "video of shape "
              + Arrays.toString(video.shape())
              + ": height and width must be multiples of the VAE's patch size "
              + size);
    }
    Tensor patches =
        backend
            .contiguous(video)
            .reshape(b, c, t, h / size, size, w / size, size)
            .permute(0, 1, 6, 4, 2, 3, 5);
    return backend.contiguous(patches).reshape(b, c * size * size, t, h / size, w / size);
  }

  /** {@code [B, C·p², T, H, W]} → {@code [B, C, T, H·p, W·p]}, the inverse of {@link #fold}. */
  Tensor unfold(Tensor x) {
    if (size == 1) {
      return x;
    }
    int b = x.dim(0);
    int c = x.dim(1) / (size * size);
    int t = x.dim(2);
    int h = x.dim(3);
    int w = x.dim(4);
    Tensor pixels =
        backend.contiguous(x).reshape(b, c, size, size, t, h, w).permute(0, 1, 4, 5, 3, 6, 2);
    return backend.contiguous(pixels).reshape(b, c, t, h * size, w * size);
  }
}
