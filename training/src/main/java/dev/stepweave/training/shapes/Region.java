package dev.stepweave.training.shapes;

import dev.stepweave.training.data.RgbClip;

/**
 * One frame's object as the judge finds it: the largest 4-connected region of pixels nearer the
 * object colour than the background, with its area, bounding box and centroid.
 */
record Region(int frame, int area, int boxArea, double cx, double cy) {
  /** The region's share of its bounding box: π/4 for a disk, 1 for an axis-aligned square. */
  double fill() {
    return area / (double) boxArea;
  }

  /** Frame {@code f}'s largest region, or null when no pixel is nearer {@code fg}. */
  static Region largest(RgbClip clip, int f, int[] bg, int[] fg) {
    int w = clip.width();
    int h = clip.height();
    boolean[] object = new boolean[w * h];
    int[] axis = {fg[0] - bg[0], fg[1] - bg[1], fg[2] - bg[2]};
    int norm = axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2];
    for (int y = 0; y < h; y++) {
      for (int x = 0; x < w; x++) {
        int dot = 0;
        for (int c = 0; c < 3; c++) {
          dot += (clip.get(f, y, x, c) - bg[c]) * axis[c];
        }
        // Past the midpoint of the segment from background to object colour.
        object[y * w + x] = norm > 0 && 2 * dot >= norm;
      }
    }
    Region best = null;
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
      if (best == null || tail > best.area()) {
        best =
            new Region(
                f, tail, (x1 - x0 + 1) * (y1 - y0 + 1), sumX / (double) tail, sumY / (double) tail);
      }
    }
    return best;
  }
}
