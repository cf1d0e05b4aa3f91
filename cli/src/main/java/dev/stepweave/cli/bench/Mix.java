package dev.stepweave.cli.bench;

import java.util.Locale;

/**
 * A kind of serving traffic: the share of its requests that are one-frame images, the rest being
 * short videos.
 */
public enum Mix {
  IMAGE_HEAVY("image", 0.75),
  VIDEO_HEAVY("video", 0.25);

  private final String cliName;
  private final double imageShare;

  Mix(String cliName, double imageShare) {
    this.cliName = cliName;
    this.imageShare = imageShare;
  }

  /** The name on the command line ({@code --mix image}). */
  public String cliName() {
    return cliName;
  }

  /** How many of {@code n} requests are images: the share, rounded, but never all of them. */
  int imageCount(int n) {
    int images = (int) Math.round(n * imageShare);
    return n >= 2 ? Math.clamp(images, 1, n - 1) : images;
  }

  /** The table's label: {@code image-heavy}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
