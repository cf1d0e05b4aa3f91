package dev.stepweave.training.shapes;

/** Where the object moves; image rows grow downwards, so {@link #UP} decreases y. */
public enum Direction implements Word {
  LEFT(-1, 0),
  RIGHT(1, 0),
  UP(0, -1),
  DOWN(0, 1);

  private final int dx;
  private final int dy;

  Direction(int dx, int dy) {
    this.dx = dx;
    this.dy = dy;
  }

  /** −1, 0 or 1: the sign of the motion along x. */
  public int dx() {
    return dx;
  }

  /** −1, 0 or 1: the sign of the motion along y. */
  public int dy() {
    return dy;
  }

  public boolean horizontal() {
    return dx != 0;
  }
}
