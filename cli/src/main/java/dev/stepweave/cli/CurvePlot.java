package dev.stepweave.cli;

import dev.stepweave.media.PngWriter;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A run's per-step curve as a PNG ({@code loss.png}: the loss; {@code reward.png}: an RL run's
 * group reward), drawn without fonts (so it needs nothing of a desktop): the step on x from the
 * first to the last logged, the value on y from its lowest to its highest, log-scaled when they are
 * positive and span more than a factor of ten; each step's value in light blue, its running mean
 * over a twentieth of the run in dark blue, on white with gray axes and gray lines at each power of
 * ten (log scale) or each fifth of the range (linear). The numbers are in {@code loss.jsonl}.
 */
final class CurvePlot {
  static final String LOSS = "loss.png";
  static final String REWARD = "reward.png";
  private static final int WIDTH = 640;
  private static final int HEIGHT = 360;
  private static final int MARGIN = 24;
  private static final float[] WHITE = {1f, 1f, 1f};
  private static final float[] GRID = {0.88f, 0.88f, 0.88f};
  private static final float[] AXIS = {0.45f, 0.45f, 0.45f};
  private static final float[] RAW = {0.62f, 0.76f, 0.95f};
  private static final float[] MEAN = {0.05f, 0.22f, 0.6f};

  private final float[] pixels = new float[WIDTH * HEIGHT * 3];

  private CurvePlot() {
    for (int i = 0; i < WIDTH * HEIGHT; i++) {
      System.arraycopy(WHITE, 0, pixels, i * 3, 3);
    }
  }

  /**
   * Whether this Java runtime can write PNG: ImageIO lives in {@code java.desktop}, which a jlink'd
   * runtime may leave out (the device package's does), and without it the first call into the
   * writer fails with a linkage error that would end the run at its checkpoint.
   */
  private static final boolean PNG_WRITABLE =
      ModuleLayer.boot().findModule("java.desktop").isPresent();

  /**
   * Draws {@code values} (one per step, in order) into {@code file}; nothing for no values.
   *
   * @throws IOException when the file cannot be written, or this runtime cannot write PNG at all
   */
  static void write(Path file, double[] values) throws IOException {
    if (values.length == 0) {
      return;
    }
    if (!PNG_WRITABLE) {
      throw new IOException(
          "this Java runtime has no java.desktop module to write "
              + file.getFileName()
              + " (the numbers are in loss.jsonl)");
    }
    new CurvePlot().draw(values).writeTo(file);
  }

  private CurvePlot draw(double[] values) {
    double lo = Arrays.stream(values).filter(d -> d > 0).min().orElse(1e-12);
    double hi = Arrays.stream(values).max().orElse(1);
    boolean log = Arrays.stream(values).min().orElse(0) > 0 && hi / lo > 10;
    double bottom = log ? Math.log10(lo) : Math.min(0, lo);
    double top = log ? Math.log10(hi) : hi;
    if (top <= bottom) {
      top = bottom + 1;
    }
    if (log) {
      for (int p = (int) Math.ceil(bottom); p <= top; p++) {
        horizontal(y(p, bottom, top), GRID);
      }
    } else {
      for (int k = 1; k < 5; k++) {
        horizontal(y(bottom + (top - bottom) * k / 5, bottom, top), GRID);
      }
    }
    line(MARGIN, HEIGHT - MARGIN, WIDTH - MARGIN, HEIGHT - MARGIN, AXIS);
    line(MARGIN, MARGIN, MARGIN, HEIGHT - MARGIN, AXIS);
    int window = Math.max(1, values.length / 20);
    double sum = 0;
    int[] rawPrev = null;
    int[] meanPrev = null;
    for (int i = 0; i < values.length; i++) {
      double v = values[i];
      sum += v;
      if (i >= window) {
        sum -= values[i - window];
      }
      double mean = sum / Math.min(i + 1, window);
      int x = x(i, values.length);
      int[] raw = {x, y(value(v, log), bottom, top)};
      int[] avg = {x, y(value(mean, log), bottom, top)};
      if (rawPrev != null) {
        line(rawPrev[0], rawPrev[1], raw[0], raw[1], RAW);
        line(meanPrev[0], meanPrev[1], avg[0], avg[1], MEAN);
      }
      rawPrev = raw;
      meanPrev = avg;
    }
    if (values.length == 1) {
      line(rawPrev[0] - 2, rawPrev[1], rawPrev[0] + 2, rawPrev[1], MEAN);
    }
    return this;
  }

  private static double value(double v, boolean log) {
    return log ? Math.log10(Math.max(v, 1e-12)) : v;
  }

  private static int x(int i, int n) {
    return MARGIN + (n == 1 ? 0 : (int) Math.round((double) i * (WIDTH - 2 * MARGIN) / (n - 1)));
  }

  private static int y(double v, double bottom, double top) {
    double unit = (v - bottom) / (top - bottom);
    return HEIGHT - MARGIN - (int) Math.round(Math.clamp(unit, 0, 1) * (HEIGHT - 2 * MARGIN));
  }

  private void horizontal(int y, float[] color) {
    line(MARGIN, y, WIDTH - MARGIN, y, color);
  }

  /** Bresenham's line. */
  private void line(int x0, int y0, int x1, int y1, float[] color) {
    int dx = Math.abs(x1 - x0);
    int dy = -Math.abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1;
    int sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    while (true) {
      if (x0 >= 0 && x0 < WIDTH && y0 >= 0 && y0 < HEIGHT) {
        System.arraycopy(color, 0, pixels, (y0 * WIDTH + x0) * 3, 3);
      }
      if (x0 == x1 && y0 == y1) {
        return;
      }
      int e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }

  private void writeTo(Path file) throws IOException {
    PngWriter.writeImage(file, Tensor.of(pixels, HEIGHT, WIDTH, 3));
  }
}
