package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/** Peak signal-to-noise ratio between pixel tensors with values in [0, 1] (peak 1). */
public final class Psnr {
  private Psnr() {}

  /**
   * PSNR in dB over all elements of two same-shaped CPU tensors: {@code 10 log10(1 / MSE)};
   * positive infinity when they are identical.
   */
  public static double between(Tensor a, Tensor b) {
    if (!Arrays.equals(a.shape(), b.shape())) {
      throw new IllegalArgumentException(
          "PSNR needs equal shapes, got "
              + Arrays.toString(a.shape())
              + " and "
              + Arrays.toString(b.shape()));
    }
    if (a.numel() == 0) {
      throw new IllegalArgumentException("PSNR of empty tensors is undefined");
    }
    Tensor left = a.rank() == 0 ? a.reshape(1) : a;
    Tensor right = b.rank() == 0 ? b.reshape(1) : b;
    double squaredError = 0;
    // Slice along the first axis so a long clip never needs one giant array.
    for (int i = 0; i < left.dim(0); i++) {
      float[] x = left.select(0, i).toFloatArray();
      float[] y = right.select(0, i).toFloatArray();
      for (int k = 0; k < x.length; k++) {
        double d = (double) x[k] - y[k];
        squaredError += d * d;
      }
    }
    double mse = squaredError / a.numel();
    return mse == 0 ? Double.POSITIVE_INFINITY : 10 * Math.log10(1 / mse);
  }
}
