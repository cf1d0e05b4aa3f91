package dev.stepweave.cli.bench;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * A kind of serving traffic: the kinds of request it holds and their shares. Two are sized for the
 * embedded CPU model (64-pixel frames, a few steps); the rest are the shapes real Wan traffic has —
 * 832×480 and 1024×1024 images, 256×256×33 and 832×480×81 videos — at step counts kept small enough
 * that a GPU serves a whole benchmark in minutes.
 */
public enum Traffic {
  IMAGE_HEAVY("image-heavy", Kinds.TINY_IMAGE.share(0.75), Kinds.TINY_VIDEO.share(0.25)),
  VIDEO_HEAVY("video-heavy", Kinds.TINY_IMAGE.share(0.25), Kinds.TINY_VIDEO.share(0.75)),
  IMAGES_480P("images-480p", Kinds.IMAGE_480P.share(1)),
  IMAGES_1024("images-1024", Kinds.IMAGE_1024.share(1)),
  VIDEO_256X33("video-256x33", Kinds.VIDEO_256.share(1)),
  VIDEO_480P("video-480p", Kinds.VIDEO_480P.share(1)),
  /** The four real shapes together, images most often and 480p videos rarely. */
  MIXED(
      "mixed",
      Kinds.IMAGE_480P.share(0.5),
      Kinds.IMAGE_1024.share(0.2),
      Kinds.VIDEO_256.share(0.25),
      Kinds.VIDEO_480P.share(0.05));

  /** A frame size. */
  public record Size(int width, int height) {}

  /**
   * One kind of request and its share of the traffic; each request of it draws its size, frame
   * count and step count uniformly from these lists (a size listed twice is drawn twice as often).
   */
  public record RequestKind(
      double share, List<Size> sizes, List<Integer> frames, List<Integer> steps) {
    public RequestKind {
      sizes = List.copyOf(sizes);
      frames = List.copyOf(frames);
      steps = List.copyOf(steps);
    }

    RequestKind share(double s) {
      return new RequestKind(s, sizes, frames, steps);
    }
  }

  /** The kinds of request, each shared by the traffics that hold it. */
  private static final class Kinds {
    // Tiny images weighted 2:1 towards the square size; videos short (4k+1 frames for the VAE).
    static final RequestKind TINY_IMAGE =
        new RequestKind(
            1, List.of(px(64, 64), px(64, 64), px(96, 64)), List.of(1), List.of(4, 6, 8));
    static final RequestKind TINY_VIDEO =
        new RequestKind(1, List.of(px(64, 64)), List.of(5, 9), List.of(4, 6));
    static final RequestKind IMAGE_480P =
        new RequestKind(1, List.of(px(832, 480)), List.of(1), List.of(20, 30));
    static final RequestKind IMAGE_1024 =
        new RequestKind(1, List.of(px(1024, 1024)), List.of(1), List.of(20, 30));
    static final RequestKind VIDEO_256 =
        new RequestKind(1, List.of(px(256, 256)), List.of(33), List.of(20, 30));
    // About a second a guided step for the 1.3B model on an H200, so few steps.
    static final RequestKind VIDEO_480P =
        new RequestKind(1, List.of(px(832, 480)), List.of(81), List.of(6, 8));
  }

  private final String cliName;
  private final List<RequestKind> kinds;

  Traffic(String cliName, RequestKind... kinds) {
    this.cliName = cliName;
    this.kinds = List.of(kinds);
  }

  /** The name on the command line and in the table ({@code --workload images-480p}). */
  public String cliName() {
    return cliName;
  }

  public List<RequestKind> kinds() {
    return kinds;
  }

  /**
   * How many of {@code n} requests are of each kind: the shares, rounded by largest remainder, but
   * with every kind present once {@code n} allows it (taken from the largest).
   */
  int[] counts(int n) {
    int[] counts = new int[kinds.size()];
    double[] remainders = new double[kinds.size()];
    int left = n;
    for (int k = 0; k < counts.length; k++) {
      double exact = n * kinds.get(k).share();
      counts[k] = (int) Math.floor(exact);
      remainders[k] = exact - counts[k];
      left -= counts[k];
    }
    for (; left > 0; left--) {
      int best = 0;
      for (int k = 1; k < counts.length; k++) {
        if (remainders[k] > remainders[best]) {
          best = k;
        }
      }
      counts[best]++;
      remainders[best] = -1;
    }
    for (int k = 0; k < counts.length && n >= counts.length; k++) {
      if (counts[k] == 0) {
        counts[largest(counts)]--;
        counts[k] = 1;
      }
    }
    return counts;
  }

  /** The traffic named {@code name} on the command line. */
  public static Traffic byName(String name) {
    return Arrays.stream(values())
        .filter(t -> t.cliName.equals(name.strip().toLowerCase(Locale.ROOT)))
        .findFirst()
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    "unknown workload '" + name + "' (available: " + names() + ")"));
  }

  /** Every name, comma-separated. */
  public static String names() {
    return Arrays.stream(values()).map(Traffic::cliName).collect(Collectors.joining(", "));
  }

  private static int largest(int[] counts) {
    int best = 0;
    for (int k = 1; k < counts.length; k++) {
      if (counts[k] > counts[best]) {
        best = k;
      }
    }
    return best;
  }

  private static Size px(int width, int height) {
    return new Size(width, height);
  }
}
