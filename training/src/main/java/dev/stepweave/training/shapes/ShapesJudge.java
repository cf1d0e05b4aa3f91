package dev.stepweave.training.shapes;

import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.reward.ClipReward;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Judges a clip against a shapes caption from its pixels alone:
 *
 * <ul>
 *   <li><b>background</b> — the per-channel median of every frame's border pixels, mapped to the
 *       nearest palette background;
 *   <li><b>object colour</b> — of the pixels far ({@value #FAR} or more in RGB distance) from that
 *       measured background, the per-channel median of the farthest quarter (the object's core, not
 *       its blurred edge), mapped to the nearest palette colour;
 *   <li><b>shape</b> — per frame, the object is the largest 4-connected region of pixels nearer the
 *       object colour than the background (projected on the line between them, so an anti-aliased
 *       edge counts when half covered); the median over frames of its corner ratio ({@link Region}:
 *       fourth moments along the diagonals over those along the axes) is 1 for a disk and 4/3 for a
 *       square, split halfway;
 *   <li><b>direction</b> — the least-squares slope of that region's centroid over the frames; its
 *       dominant axis and sign, if it moves at least a tenth of the frame over the clip.
 * </ul>
 *
 * A clip with too few object pixels has no colour, shape or direction: those count as wrong.
 */
public final class ShapesJudge implements ClipReward {
  /** RGB distance from the background above which a pixel may be the object. */
  static final int FAR = 40;

  private static final int MAX_DISTANCE = 442; // ⌊255·√3⌋

  // Halfway between a disk's corner ratio (1) and a square's (4/3).
  private static final double SQUARE_RATIO = 7 / 6.0;
  // The smallest motion over the clip, as a fraction of the frame along its axis, that counts.
  private static final double MIN_TRAVEL = 0.1;

  /** Judges {@code clip} against {@code prompt}, which must be a shapes caption. */
  @Override
  public double reward(RgbClip clip, String prompt) {
    return judge(clip, ShapeCaption.parse(prompt)).score();
  }

  public Verdict judge(RgbClip clip, ShapeCaption wanted) {
    return new Verdict(wanted, estimate(clip));
  }

  /** What {@code clip} shows. */
  public ShapeEstimate estimate(RgbClip clip) {
    int[] bg = borderMedian(clip);
    Background background = Background.nearest(bg[0], bg[1], bg[2]);
    int minPixels = minPixels(clip);
    int[] fg = coreColor(clip, bg, minPixels * clip.frames());
    if (fg == null) {
      return new ShapeEstimate(background, Optional.empty(), Optional.empty(), Optional.empty());
    }
    ObjectColor color = ObjectColor.nearest(fg[0], fg[1], fg[2]);
    List<Region> regions = new ArrayList<>();
    for (int f = 0; f < clip.frames(); f++) {
      Region r = Region.largest(clip, f, bg, fg);
      if (r != null && r.area() >= minPixels) {
        regions.add(r);
      }
    }
    if (regions.isEmpty()) {
      return new ShapeEstimate(background, Optional.of(color), Optional.empty(), Optional.empty());
    }
    double[] ratios = regions.stream().mapToDouble(Region::cornerRatio).sorted().toArray();
    Shape shape = ratios[ratios.length / 2] >= SQUARE_RATIO ? Shape.SQUARE : Shape.BALL;
    return new ShapeEstimate(
        background, Optional.of(color), Optional.of(shape), direction(regions, clip));
  }

  /**
   * How near the object's core colour (as {@link #estimate} measures it) is to {@code wanted}: 1
   * minus their RGB distance over the largest possible, so 1 for the palette colour itself; 0 when
   * there is no object. A graded colour score for a reward, where {@link Verdict} only says right
   * or wrong.
   */
  public double colorNearness(RgbClip clip, ObjectColor wanted) {
    int[] bg = borderMedian(clip);
    int[] fg = coreColor(clip, bg, minPixels(clip) * clip.frames());
    if (fg == null) {
      return 0;
    }
    return 1 - Math.sqrt(wanted.rgb().distanceSquared(fg[0], fg[1], fg[2])) / MAX_DISTANCE;
  }

  /** The dominant axis and sign of the centroid's least-squares motion, if it moved enough. */
  private static Optional<Direction> direction(List<Region> regions, RgbClip clip) {
    if (regions.size() < 2) {
      return Optional.empty();
    }
    double mf = regions.stream().mapToInt(Region::frame).average().orElseThrow();
    double mx = regions.stream().mapToDouble(Region::cx).average().orElseThrow();
    double my = regions.stream().mapToDouble(Region::cy).average().orElseThrow();
    double sff = 0;
    double sfx = 0;
    double sfy = 0;
    for (Region r : regions) {
      double df = r.frame() - mf;
      sff += df * df;
      sfx += df * (r.cx() - mx);
      sfy += df * (r.cy() - my);
    }
    double span = clip.frames() - 1;
    double travelX = sfx / sff * span / clip.width();
    double travelY = sfy / sff * span / clip.height();
    boolean horizontal = Math.abs(travelX) >= Math.abs(travelY);
    double travel = horizontal ? travelX : travelY;
    if (Math.abs(travel) < MIN_TRAVEL) {
      return Optional.empty();
    }
    if (horizontal) {
      return Optional.of(travel > 0 ? Direction.RIGHT : Direction.LEFT);
    }
    return Optional.of(travel > 0 ? Direction.DOWN : Direction.UP);
  }

  /** The fewest pixels a frame's object has (fewer: there is none). */
  private static int minPixels(RgbClip clip) {
    return Math.max(4, clip.width() * clip.height() / 1000);
  }

  /** The per-channel median of every frame's border pixels. */
  private static int[] borderMedian(RgbClip clip) {
    int[][] histograms = new int[3][256];
    int w = clip.width();
    int h = clip.height();
    for (int f = 0; f < clip.frames(); f++) {
      for (int y = 0; y < h; y++) {
        boolean edgeRow = y == 0 || y == h - 1;
        for (int x = 0; x < w; x += edgeRow || x == w - 1 ? 1 : w - 1) {
          for (int c = 0; c < 3; c++) {
            histograms[c][clip.get(f, y, x, c)]++;
          }
        }
      }
    }
    return medians(histograms);
  }

  /**
   * The object's colour: the per-channel median of the farthest quarter of the pixels far from
   * {@code bg} — the object's core, not the blurred or anti-aliased edge between it and the
   * background — or null if fewer than {@code atLeast} pixels are far.
   */
  private static int[] coreColor(RgbClip clip, int[] bg, int atLeast) {
    int[] distances = new int[MAX_DISTANCE + 1];
    int count = 0;
    for (int f = 0; f < clip.frames(); f++) {
      for (int y = 0; y < clip.height(); y++) {
        for (int x = 0; x < clip.width(); x++) {
          int d = distance(clip, f, y, x, bg);
          if (d >= FAR) {
            distances[d]++;
            count++;
          }
        }
      }
    }
    if (count < atLeast) {
      return null;
    }
    int core = MAX_DISTANCE;
    for (int seen = distances[core]; seen < Math.ceilDiv(count, 4); seen += distances[core]) {
      core--;
    }
    int[][] histograms = new int[3][256];
    for (int f = 0; f < clip.frames(); f++) {
      for (int y = 0; y < clip.height(); y++) {
        for (int x = 0; x < clip.width(); x++) {
          if (distance(clip, f, y, x, bg) >= core) {
            for (int c = 0; c < 3; c++) {
              histograms[c][clip.get(f, y, x, c)]++;
            }
          }
        }
      }
    }
    return medians(histograms);
  }

  /** The RGB distance of a pixel from {@code bg}, rounded down. */
  private static int distance(RgbClip clip, int f, int y, int x, int[] bg) {
    int dr = clip.get(f, y, x, 0) - bg[0];
    int dg = clip.get(f, y, x, 1) - bg[1];
    int db = clip.get(f, y, x, 2) - bg[2];
    return (int) Math.sqrt(dr * dr + dg * dg + db * db);
  }

  private static int[] medians(int[][] histograms) {
    int[] out = new int[3];
    for (int c = 0; c < 3; c++) {
      int total = Arrays.stream(histograms[c]).sum();
      int seen = 0;
      int v = 0;
      while (seen + histograms[c][v] <= total / 2) {
        seen += histograms[c][v];
        v++;
      }
      out[c] = v;
    }
    return out;
  }
}
