package dev.stepweave.training.shapes;

/** The plain background colour. */
public enum Background implements Word {
  BLACK(new Rgb(10, 10, 10)),
  GRAY(new Rgb(128, 128, 128)),
  PURPLE(new Rgb(90, 40, 120));

  private final Rgb rgb;

  Background(Rgb rgb) {
    this.rgb = rgb;
  }

  public Rgb rgb() {
    return rgb;
  }

  /** The palette background nearest to {@code (r, g, b)}. */
  public static Background nearest(int r, int g, int b) {
    Background best = BLACK;
    for (Background c : values()) {
      if (c.rgb.distanceSquared(r, g, b) < best.rgb.distanceSquared(r, g, b)) {
        best = c;
      }
    }
    return best;
  }
}
