package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.util.SplittableRandom;

/** Deterministic {@code [F, H, W, 3]} test clips. */
final class SyntheticClips {
  private SyntheticClips() {}

  /**
   * Smooth colour gradients that drift, with a disc and a square moving across them; shape edges
   * are anti-aliased over about two pixels, as in rendered or generated video.
   */
  static Tensor gradientsAndShapes(int frames, int height, int width) {
    float[] data = new float[frames * height * width * 3];
    double radius = Math.min(height, width) * 0.15;
    double half = Math.min(height, width) / 10.0;
    for (int f = 0; f < frames; f++) {
      double discX = width * (0.2 + 0.6 * f / Math.max(1, frames - 1));
      double discY = height * 0.4;
      double squareX = width * 0.7 - 2 * f;
      double squareY = height * 0.65 + f;
      for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
          double r = (double) x / width;
          double g = (double) y / height;
          double b = 0.5 + 0.4 * Math.sin((x + y + 3.0 * f) / 20.0);
          double disc = coverage(radius - Math.hypot(x - discX, y - discY));
          r += disc * (0.95 - r);
          g += disc * (0.85 - g);
          b += disc * (0.1 - b);
          double square = coverage(half - Math.max(Math.abs(x - squareX), Math.abs(y - squareY)));
          r += square * (0.1 - r);
          g += square * (0.2 - g);
          b += square * (0.8 - b);
          int i = ((f * height + y) * width + x) * 3;
          data[i] = (float) r;
          data[i + 1] = (float) g;
          data[i + 2] = (float) b;
        }
      }
    }
    return Tensor.of(data, frames, height, width, 3);
  }

  /** How much of a pixel lies inside a shape, from its signed distance to the edge. */
  private static double coverage(double insideDistance) {
    return Math.clamp(0.5 + insideDistance / 2, 0, 1);
  }

  /** Independent uniform noise in every channel of every pixel of every frame. */
  static Tensor pixelNoise(int frames, int height, int width, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    float[] data = new float[frames * height * width * 3];
    for (int i = 0; i < data.length; i++) {
      data[i] = (float) random.nextDouble();
    }
    return Tensor.of(data, frames, height, width, 3);
  }

  /** Independent uniform grey levels per pixel and frame: noise with no colour. */
  static Tensor greyNoise(int frames, int height, int width, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    float[] data = new float[frames * height * width * 3];
    for (int p = 0; p < frames * height * width; p++) {
      float grey = (float) random.nextDouble();
      data[p * 3] = grey;
      data[p * 3 + 1] = grey;
      data[p * 3 + 2] = grey;
    }
    return Tensor.of(data, frames, height, width, 3);
  }

  /**
   * Independent uniform RGB noise per {@code block}×{@code block} square: colour noise with the
   * spatial correlation that upsampling layers give an untrained decoder's output.
   */
  static Tensor blockNoise(int frames, int height, int width, int block, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int rows = (height + block - 1) / block;
    int cols = (width + block - 1) / block;
    float[] data = new float[frames * height * width * 3];
    float[] blocks = new float[rows * cols * 3];
    for (int f = 0; f < frames; f++) {
      for (int i = 0; i < blocks.length; i++) {
        blocks[i] = (float) random.nextDouble();
      }
      for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
          int i = ((f * height + y) * width + x) * 3;
          System.arraycopy(blocks, ((y / block) * cols + x / block) * 3, data, i, 3);
        }
      }
    }
    return Tensor.of(data, frames, height, width, 3);
  }
}
