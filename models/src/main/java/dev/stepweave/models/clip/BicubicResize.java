package dev.stepweave.models.clip;

/**
 * The antialiased bicubic resize of 8-bit images that the reference image processor runs: Pillow's
 * algorithm ({@code ImagingResample}) with the fixed-point weights of torch's CPU uint8 kernel,
 * which transformers' default ({@code torchvision}-backed) {@code CLIPImageProcessor} calls.
 *
 * <p>It is a separable convolution, horizontal pass first, each pass rounding and clamping its
 * result to 8 bits. Each output sample's kernel is the Keys cubic ({@code a = -0.5}) centred on the
 * sample's centre in input coordinates and, when downscaling, stretched by the scale factor so it
 * averages over the sample's whole footprint; its taps are normalised to sum to one and rounded to
 * 16-bit integers with as many fractional bits as the pass's largest tap allows. Pillow itself (the
 * processor's PIL backend) rounds the taps to 22 fractional bits instead, and a few samples then
 * come out one level apart: such are the last-bit differences the golden bound allows.
 */
final class BicubicResize {
  private static final double SUPPORT = 2.0;
  private static final double A = -0.5;

  /** torch's bound on fractional bits, whatever the taps (Pillow's fixed precision). */
  private static final int MAX_PRECISION = 22;

  private static final int INT16_LIMIT = 1 << 15;
  private static final int CHANNELS = 3;

  private BicubicResize() {}

  /**
   * {@code image} resampled to {@code width × height}; a side that keeps its size is not touched.
   */
  static RgbImage resize(RgbImage image, int width, int height) {
    RgbImage out = image;
    if (width != out.width()) {
      out = horizontal(out, width);
    }
    if (height != out.height()) {
      out = vertical(out, height);
    }
    return out;
  }

  private static RgbImage horizontal(RgbImage in, int width) {
    Taps taps = Taps.of(in.width(), width);
    byte[] src = in.rgb();
    byte[] dst = new byte[width * in.height() * CHANNELS];
    for (int y = 0; y < in.height(); y++) {
      int row = y * in.width();
      for (int x = 0; x < width; x++) {
        int[] k = taps.weights[x];
        int first = taps.first[x];
        for (int c = 0; c < CHANNELS; c++) {
          int sum = taps.half();
          for (int i = 0; i < k.length; i++) {
            sum += (src[(row + first + i) * CHANNELS + c] & 0xff) * k[i];
          }
          dst[(y * width + x) * CHANNELS + c] = taps.clip8(sum);
        }
      }
    }
    return new RgbImage(width, in.height(), dst);
  }

  private static RgbImage vertical(RgbImage in, int height) {
    Taps taps = Taps.of(in.height(), height);
    byte[] src = in.rgb();
    int rowBytes = in.width() * CHANNELS;
    byte[] dst = new byte[height * rowBytes];
    for (int y = 0; y < height; y++) {
      int[] k = taps.weights[y];
      int first = taps.first[y];
      for (int j = 0; j < rowBytes; j++) {
        int sum = taps.half();
        for (int i = 0; i < k.length; i++) {
          sum += (src[(first + i) * rowBytes + j] & 0xff) * k[i];
        }
        dst[y * rowBytes + j] = taps.clip8(sum);
      }
    }
    return new RgbImage(in.width(), height, dst);
  }

  /** Keys' cubic convolution kernel with {@code a = -0.5}, support 2. */
  private static double cubic(double x) {
    double t = Math.abs(x);
    if (t < 1.0) {
      return ((A + 2.0) * t - (A + 3.0)) * t * t + 1;
    }
    if (t < 2.0) {
      return (((t - 5) * t + 8) * t - 4) * A;
    }
    return 0.0;
  }

  /**
   * The fixed-point taps of one pass: output sample {@code j} reads input samples {@code first[j]}
   * onwards, one per weight; weights have {@code precision} fractional bits.
   */
  private record Taps(int[] first, int[][] weights, int precision) {
    static Taps of(int inSize, int outSize) {
      double scale = (double) inSize / outSize;
      double filterScale = Math.max(scale, 1.0);
      double support = SUPPORT * filterScale;
      double inverseFilterScale = 1.0 / filterScale;
      int[] first = new int[outSize];
      double[][] normalised = new double[outSize][];
      double largest = 0.0;
      for (int j = 0; j < outSize; j++) {
        double center = (j + 0.5) * scale;
        // Truncation toward zero, then clamping, as Pillow bounds its taps.
        int lo = Math.max((int) (center - support + 0.5), 0);
        int hi = Math.min((int) (center + support + 0.5), inSize);
        double[] w = new double[hi - lo];
        double total = 0.0;
        for (int i = 0; i < w.length; i++) {
          w[i] = cubic((i + lo - center + 0.5) * inverseFilterScale);
          total += w[i];
        }
        for (int i = 0; i < w.length; i++) {
          if (total != 0.0) {
            w[i] /= total;
          }
          largest = Math.max(largest, w[i]);
        }
        first[j] = lo;
        normalised[j] = w;
      }
      int precision = precisionFor(largest);
      int[][] weights = new int[outSize][];
      for (int j = 0; j < outSize; j++) {
        double[] w = normalised[j];
        weights[j] = new int[w.length];
        for (int i = 0; i < w.length; i++) {
          double scaled = w[i] * (1 << precision);
          weights[j][i] = (int) (scaled < 0 ? scaled - 0.5 : scaled + 0.5);
        }
      }
      return new Taps(first, weights, precision);
    }

    /** The most fractional bits (at most 22) with which the largest tap still fits in int16. */
    private static int precisionFor(double largest) {
      int bits = 0;
      while (bits < MAX_PRECISION && (int) (0.5 + largest * (1 << (bits + 1))) < INT16_LIMIT) {
        bits++;
      }
      return bits;
    }

    /** The rounding half a sum starts from. */
    int half() {
      return 1 << (precision - 1);
    }

    /** Drops a sum's fractional bits (rounded by {@link #half}) and clamps it to 0..255. */
    byte clip8(int sum) {
      return (byte) Math.clamp(sum >> precision, 0, 255);
    }
  }
}
