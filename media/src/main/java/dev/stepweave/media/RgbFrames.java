package dev.stepweave.media;

import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/** Checks and reads the RGB tensors that media writers accept. */
final class RgbFrames {
  private RgbFrames() {}

  /**
   * Requires {@code [F, H, W, 3]} floating-point frames on the CPU with at least one frame and
   * finite values. Values outside [0, 1] are legal (writers clamp them); NaN and infinity are not,
   * because writing them would silently turn a numerical bug into a black picture.
   */
  static void requireVideo(Tensor frames) {
    if (frames.rank() != 4 || frames.dim(3) != 3) {
      throw new IllegalArgumentException(
          "video frames must be [F, H, W, 3], got " + Arrays.toString(frames.shape()));
    }
    if (frames.dim(0) < 1 || frames.dim(1) < 1 || frames.dim(2) < 1) {
      throw new IllegalArgumentException(
          "video frames must not be empty, got " + Arrays.toString(frames.shape()));
    }
    requireHostFloat(frames);
    for (int f = 0; f < frames.dim(0); f++) {
      requireFinite(frame(frames, f), "frame " + f);
    }
  }

  /** Requires one finite {@code [H, W, 3]} floating-point image on the CPU. */
  static void requireImage(Tensor pixels) {
    if (pixels.rank() != 3 || pixels.dim(2) != 3 || pixels.dim(0) < 1 || pixels.dim(1) < 1) {
      throw new IllegalArgumentException(
          "image must be a non-empty [H, W, 3], got " + Arrays.toString(pixels.shape()));
    }
    requireHostFloat(pixels);
    requireFinite(pixels.toFloatArray(), "image");
  }

  /** Frame {@code f} of {@code [F, H, W, 3]} frames as row-major {@code [H, W, 3]} values. */
  static float[] frame(Tensor frames, int f) {
    return frames.select(0, f).toFloatArray();
  }

  private static void requireHostFloat(Tensor t) {
    if (t.device().kind() != Device.Kind.CPU) {
      throw new IllegalArgumentException("pixels must be on the CPU, got " + t);
    }
    if (!t.dtype().isFloating()) {
      throw new IllegalArgumentException("pixels must be floating point, got " + t);
    }
  }

  private static void requireFinite(float[] values, String what) {
    for (int i = 0; i < values.length; i++) {
      if (!Float.isFinite(values[i])) {
        throw new IllegalArgumentException(
            what + " holds a non-finite value (" + values[i] + ") at element " + i);
      }
    }
  }
}
