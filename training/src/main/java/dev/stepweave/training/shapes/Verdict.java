package dev.stepweave.training.shapes;

/** The judge's verdict on one clip: what was asked, what was seen, and which attributes match. */
public record Verdict(ShapeCaption wanted, ShapeEstimate seen) {
  /** The number of attributes a verdict judges. */
  public static final int ATTRIBUTES = 4;

  public boolean backgroundRight() {
    return seen.background() == wanted.background();
  }

  public boolean colorRight() {
    return seen.color().map(c -> c == wanted.color()).orElse(false);
  }

  public boolean shapeRight() {
    return seen.shape().map(s -> s == wanted.shape()).orElse(false);
  }

  public boolean directionRight() {
    return seen.direction().map(d -> d == wanted.direction()).orElse(false);
  }

  /** How many of the four attributes are right. */
  public int right() {
    return (backgroundRight() ? 1 : 0)
        + (colorRight() ? 1 : 0)
        + (shapeRight() ? 1 : 0)
        + (directionRight() ? 1 : 0);
  }

  /** The fraction of attributes right, 0, ¼, ½, ¾ or 1. */
  public double score() {
    return right() / (double) ATTRIBUTES;
  }
}
