package dev.stepweave.training.shapes;

/** The colour of the moving object. */
public enum ObjectColor implements Word {
  RED(new Rgb(220, 40, 40)),
  GREEN(new Rgb(40, 180, 60)),
  BLUE(new Rgb(40, 80, 220)),
  YELLOW(new Rgb(230, 210, 40)),
  WHITE(new Rgb(240, 240, 240));

  private final Rgb rgb;

  ObjectColor(Rgb rgb) {
    this.rgb = rgb;
  }

  public Rgb rgb() {
    return rgb;
  }

  /** The palette colour nearest to {@code (r, g, b)}. */
  public static ObjectColor nearest(int r, int g, int b) {
    ObjectColor best = RED;
    for (ObjectColor c : values()) {
      if (c.rgb.distanceSquared(r, g, b) < best.rgb.distanceSquared(r, g, b)) {
        best = c;
      }
    }
    return best;
  }
}
