package dev.stepweave.training.shapes;

import dev.stepweave.training.data.RgbClip;

/**
 * One frame's object as the judge finds it: the largest 4-connected region of pixels nearer the
 * object colour than the background, with its pixel count, centroid, and corner ratio.
 *
 * <p>The corner ratio tells a square from a disk: the object's fourth moments about its centroid
 * along the diagonals over those along the axes, {@code Σ(u⁴ + v⁴) / Σ(x⁴ + y⁴)} with {@code u, v =
 * (x ± y)/√2} — 4/3 for an axis-aligned square (its corners reach out along the diagonals), 1 for a
 * disk. Each pixel of the region's box widened by {@value #PAD} pixel weighs by where it lies
 * between the background and the object colour (0 at the one, 1 at the other, not clipped to 0..1
 * so zero-mean grain cancels), which keeps the ratio steady under blurred edges and noise, and
 * scale-free.
 */
record Region(int frame, int area, double cx, double cy, double cornerRatio) {
  private static final int PAD = 1;

  /** Frame {@code f}'s largest region, or null when no pixel is nearer {@code fg}. */
  static Region largest(RgbClip clip, int f, int[] bg, int[] fg) {
    int w = clip.width();
    int h = clip.height();
    int[] axis = {fg[0] - bg[0], fg[1] - bg[1], fg[2] - bg[2]};
    int norm = axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2];
    if (norm == 0) {
      return null;
    }
    boolean[] object = new boolean[w * h];
    double[] level = new double[w * h]; // 0 at the background colour, 1 at the object's
    for (int y = 0; y < h; y++) {
      for (int x = 0; x < w; x++) {
        int dot = 0;
        for (int c = 0; c < 3; c++) {
          dot += (clip.get(f, y, x, c) - bg[c]) * axis[c];
        }
        level[y * w + x] = Math.clamp(dot / (double) norm, -1, 2);
        // Past the midpoint of the segment from background to object colour.
        object[y * w + x] = 2 * dot >= norm;
      }
    }
    int[] best = null; // area, x0, y0, x1, y1
    double bestX = 0;
    double bestY = 0;
    int[] queue = new int[w * h];
    for (int seed = 0; seed < w * h; seed++) {
      if (!object[seed]) {
        continue;
      }
      object[seed] = false;
      int head = 0;
      int tail = 0;
      queue[tail++] = seed;
      long sumX = 0;
      long sumY = 0;
      int x0 = w;
      int y0 = h;
      int x1 = -1;
      int y1 = -1;
      while (head < tail) {
        int p = queue[head++];
        int x = p % w;
        int y = p / w;
        sumX += x;
        sumY += y;
        x0 = Math.min(x0, x);
        y0 = Math.min(y0, y);
        x1 = Math.max(x1, x);
        y1 = Math.max(y1, y);
        if (x > 0 && object[p - 1]) {
          object[p - 1] = false;
          queue[tail++] = p - 1;
        }
        if (x < w - 1 && object[p + 1]) {
          object[p + 1] = false;
          queue[tail++] = p + 1;
        }
        if (y > 0 && object[p - w]) {
          object[p - w] = false;
          queue[tail++] = p - w;
        }
        if (y < h - 1 && object[p + w]) {
          object[p + w] = false;
          queue[tail++] = p + w;
        }
      }
      if (best == null || tail > best[0]) {
        best = new int[] {tail, x0, y0, x1, y1};
        bestX = sumX / (double) tail;
        bestY = sumY / (double) tail;
      }
    }
    if (best == null) {
      return null;
    }
    return new Region(f, best[0], bestX, bestY, cornerRatio(level, w, h, best));
  }

  private static double cornerRatio(double[] level, int w, int h, int[] box) {
    int x0 = Math.max(0, box[1] - PAD);
    int y0 = Math.max(0, box[2] - PAD);
    int x1 = Math.min(w - 1, box[3] + PAD);
    int y1 = Math.min(h - 1, box[4] + PAD);
    double mass = 0;
    double mx = 0;
    double my = 0;
    for (int y = y0; y <= y1; y++) {
      for (int x = x0; x <= x1; x++) {
        double v = level[y * w + x];
        mass += v;
        mx += v * x;
        my += v * y;
      }
    }
    if (mass <= 0) {
      return 0;
    }
    mx /= mass;
    my /= mass;
    double axes = 0;
    double diagonals = 0;
    for (int y = y0; y <= y1; y++) {
      for (int x = x0; x <= x1; x++) {
        double v = level[y * w + x];
        double dx = x - mx;
        double dy = y - my;
        double u2 = (dx + dy) * (dx + dy) / 2;
        double v2 = (dx - dy) * (dx - dy) / 2;
        axes += v * (dx * dx * dx * dx + dy * dy * dy * dy);
        diagonals += v * (u2 * u2 + v2 * v2);
      }
    }
    return axes > 0 ? diagonals / axes : 0;
  }
}
