package dev.stepweave.training.shapes;

import dev.stepweave.training.data.RgbClip;

/**
 * Draws a {@link ShapeMotion}: the background colour everywhere, the object blended in by its
 * coverage of each pixel, counted on a 4×4 grid of sample points (so edges are anti-aliased).
 * Integer arithmetic throughout: the same bytes on every machine.
 */
final class ShapesRenderer {
  private static final int GRID = 4; // sample points per pixel side
  private static final int SAMPLES = GRID * GRID;
  private static final int SUB = ShapeMotion.SUBPIXELS;

  private ShapesRenderer() {}

  static RgbClip render(ShapeMotion m) {
    int w = m.width();
    int h = m.height();
    byte[] rgb = new byte[m.frames() * h * w * 3];
    Rgb bg = m.caption().background().rgb();
    Rgb fg = m.caption().color().rgb();
    boolean ball = m.caption().shape() == Shape.BALL;
    int size16 = m.size() * SUB;
    for (int f = 0; f < m.frames(); f++) {
      int base = f * h * w * 3;
      for (int p = 0; p < h * w; p++) {
        rgb[base + p * 3] = (byte) bg.r();
        rgb[base + p * 3 + 1] = (byte) bg.g();
        rgb[base + p * 3 + 2] = (byte) bg.b();
      }
      int left = m.x16(f);
      int top = m.y16(f);
      int x0 = Math.max(0, Math.floorDiv(left, SUB));
      int y0 = Math.max(0, Math.floorDiv(top, SUB));
      int x1 = Math.min(w, Math.ceilDiv(left + size16, SUB));
      int y1 = Math.min(h, Math.ceilDiv(top + size16, SUB));
      for (int y = y0; y < y1; y++) {
        for (int x = x0; x < x1; x++) {
          int covered = coverage(x, y, left, top, size16, ball);
          if (covered == 0) {
            continue;
          }
          int i = base + (y * w + x) * 3;
          for (int c = 0; c < 3; c++) {
            int v = (bg.channel(c) * (SAMPLES - covered) + fg.channel(c) * covered + SAMPLES / 2);
            rgb[i + c] = (byte) (v / SAMPLES);
          }
        }
      }
    }
    return new RgbClip(m.frames(), h, w, rgb);
  }

  /** How many of pixel (x, y)'s sample points the object covers, 0..16. */
  private static int coverage(int x, int y, int left, int top, int size16, boolean ball) {
    int count = 0;
    long radius = size16 / 2;
    long cx = left + radius;
    long cy = top + radius;
    for (int j = 0; j < GRID; j++) {
      int sy = y * SUB + SUB / (2 * GRID) + j * (SUB / GRID);
      for (int i = 0; i < GRID; i++) {
        int sx = x * SUB + SUB / (2 * GRID) + i * (SUB / GRID);
        boolean inside =
            ball
                ? (sx - cx) * (sx - cx) + (sy - cy) * (sy - cy) < radius * radius
                : sx >= left && sx < left + size16 && sy >= top && sy < top + size16;
        count += inside ? 1 : 0;
      }
    }
    return count;
  }
}
