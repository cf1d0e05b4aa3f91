package dev.stepweave.models.clip;

/**
 * The antialiased resize of 8-bit images that the reference pipelines run: Pillow's algorithm
 * ({@code ImagingResample}) with one of two kernels and one of two ways of rounding the taps.
 *
 * <p>It is a separable convolution, horizontal pass first, each pass rounding and clamping its
 * result to 8 bits; a side that keeps its size is not touched. Each output sample's kernel is
 * centred on the sample's centre in input coordinates and, when downscaling, stretched by the scale
 * factor so it averages over the sample's whole footprint; its taps are normalised to sum to one
 * and rounded to integers with {@link Taps#precision} fractional bits.
 *
 * <p>transformers' default ({@code torchvision}-backed) {@code CLIPImageProcessor} calls torch's
 * CPU uint8 kernel: bicubic taps as 16-bit integers with as many fractional bits as the pass's
 * largest tap allows ({@link Rounding#TORCH_UINT8}). diffusers' {@code VideoProcessor} resizes with
 * Pillow itself, Lanczos, 22 fractional bits ({@link Rounding#PILLOW}). Pillow's bicubic (the CLIP
 * processor's PIL backend) would round to 22 bits too, and a few samples then come out one level
 * apart: such are the last-bit differences the CLIP golden bound allows.
 */
public final class AntialiasedResize {
  /** The convolution kernels, with their support in input samples at scale one. */
  public enum Filter {
    /** Keys' cubic convolution with {@code a = -0.5} (Pillow's and torch's bicubic). */
    BICUBIC(2.0),
    /** Pillow's Lanczos: a sinc windowed by a sinc three times wider. */
    LANCZOS(3.0);

    private final double support;

    Filter(double support) {
      this.support = support;
    }

    double weight(double x) {
      return switch (this) {
        case BICUBIC -> cubic(x);
        case LANCZOS -> -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
      };
    }
  }

  /** How the normalised taps become integers. */
  public enum Rounding {
    /** torch's uint8 kernel: int16 taps with as many fractional bits (at most 22) as fit. */
    TORCH_UINT8,
    /** Pillow: 22 fractional bits, whatever the taps. */
    PILLOW
  }

  private static final double A = -0.5;

  /** Pillow's fractional bits, and torch's bound on them. */
  private static final int MAX_PRECISION = 22;

  private static final int INT16_LIMIT = 1 << 15;
  private static final int CHANNELS = 3;

  private AntialiasedResize() {}

  /**
   * {@code image} resampled to {@code width × height}; a side that keeps its size is not touched.
   */
  public static RgbImage resize(
      RgbImage image, int width, int height, Filter filter, Rounding rounding) {
    RgbImage out = image;
    if (width != out.width()) {
      out = horizontal(out, width, filter, rounding);
    }
    if (height != out.height()) {
      out = vertical(out, height, filter, rounding);
    }
    return out;
  }

  private static RgbImage horizontal(RgbImage in, int width, Filter filter, Rounding rounding) {
    Taps taps = Taps.of(in.width(), width, filter, rounding);
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

  private static RgbImage vertical(RgbImage in, int height, Filter filter, Rounding rounding) {
    Taps taps = Taps.of(in.height(), height, filter, rounding);
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

  /** {@code sin(πx)/(πx)}, as Pillow computes it. */
  private static double sinc(double x) {
    if (x == 0.0) {
      return 1.0;
    }
    double px = x * Math.PI;
    return Math.sin(px) / px;
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
    static Taps of(int inSize, int outSize, Filter filter, Rounding rounding) {
      double scale = (double) inSize / outSize;
      double filterScale = Math.max(scale, 1.0);
      double support = filter.support * filterScale;
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
          w[i] = filter.weight((i + lo - center + 0.5) * inverseFilterScale);
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
      int precision = rounding == Rounding.PILLOW ? MAX_PRECISION : precisionFor(largest);
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
