package dev.stepweave.training.data;

import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * A decoded clip as 8-bit RGB: {@code frames × height × width × 3} bytes, row-major, frame after
 * frame. What datasets are made of and what judges and rewards look at; a generated video's {@code
 * [F, H, W, 3]} frames in {@code [0, 1]} convert to it with {@link #fromFrames}.
 */
public final class RgbClip {
  private final int frames;
  private final int height;
  private final int width;
  private final byte[] rgb;

  /**
   * @param rgb {@code frames · height · width · 3} bytes; kept, not copied
   * @throws IllegalArgumentException when a dimension is below 1 or the byte count does not match
   */
  public RgbClip(int frames, int height, int width, byte[] rgb) {
    if (frames < 1 || height < 1 || width < 1) {
      throw new IllegalArgumentException(
          "a clip needs at least one frame of 1x1, got " + frames + "x" + height + "x" + width);
    }
    if (rgb.length != (long) frames * height * width * 3) {
      throw new IllegalArgumentException(
          "a "
              + frames
              + "-frame "
              + width
              + "x"
              + height
              + " clip needs "
              + (long) frames * height * width * 3
              + " RGB bytes, got "
              + rgb.length);
    }
    this.frames = frames;
    this.height = height;
    this.width = width;
    this.rgb = rgb;
  }

  /**
   * Frames {@code [F, H, W, 3]} with values in {@code [0, 1]} (a video artifact's frames), rounded
   * to bytes as a PNG or MP4 writer would.
   */
  public static RgbClip fromFrames(Tensor frames) {
    int[] s = frames.shape();
    if (s.length != 4 || s[3] != 3) {
      throw new IllegalArgumentException("frames must be [F, H, W, 3], got " + Arrays.toString(s));
    }
    float[] v = frames.toFloatArray();
    byte[] rgb = new byte[v.length];
    for (int i = 0; i < v.length; i++) {
      rgb[i] = (byte) Math.round(Math.clamp(v[i], 0f, 1f) * 255f);
    }
    return new RgbClip(s[0], s[1], s[2], rgb);
  }

  public int frames() {
    return frames;
  }

  public int height() {
    return height;
  }

  public int width() {
    return width;
  }

  /** Channel {@code c} (0 red, 1 green, 2 blue) of a pixel, 0..255. */
  public int get(int frame, int y, int x, int c) {
    return rgb[((frame * height + y) * width + x) * 3 + c] & 0xff;
  }

  /** A copy of the bytes. */
  public byte[] bytes() {
    return rgb.clone();
  }

  /** {@code [F, H, W, 3]} F32 in {@code [0, 1]} on the CPU: what the media writers take. */
  public Tensor toFrames() {
    float[] v = new float[rgb.length];
    for (int i = 0; i < v.length; i++) {
      v[i] = (rgb[i] & 0xff) / 255f;
    }
    return Tensor.of(v, frames, height, width, 3);
  }

  /**
   * {@code [1, 3, F, H, W]} F32 in {@code [-1, 1]} on the CPU: the VAE's input, scaled as the
   * reference's {@code VideoProcessor} does ({@code v / 255}, then {@code 2·v − 1}, in float32).
   */
  public Tensor toVaeInput() {
    int plane = height * width;
    float[] v = new float[rgb.length];
    for (int f = 0; f < frames; f++) {
      for (int p = 0; p < plane; p++) {
        for (int c = 0; c < 3; c++) {
          float unit = (rgb[(f * plane + p) * 3 + c] & 0xff) / 255f;
          v[(c * frames + f) * plane + p] = 2f * unit - 1f;
        }
      }
    }
    return Tensor.of(v, 1, 3, frames, height, width);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RgbClip c
        && c.frames == frames
        && c.height == height
        && c.width == width
        && Arrays.equals(c.rgb, rgb);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(rgb) + frames * 7 + height * 3 + width;
  }

  @Override
  public String toString() {
    return "RgbClip[" + frames + " frames of " + width + "x" + height + "]";
  }
}
