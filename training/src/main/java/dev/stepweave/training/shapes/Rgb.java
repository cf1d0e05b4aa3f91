package dev.stepweave.training.shapes;

/** An 8-bit RGB colour of the shapes palette. */
public record Rgb(int r, int g, int b) {
  public Rgb {
    if ((r | g | b) < 0 || r > 255 || g > 255 || b > 255) {
      throw new IllegalArgumentException("RGB channels are 0..255, got " + r + "," + g + "," + b);
    }
  }

  /** Squared Euclidean distance to {@code (r, g, b)}. */
  public int distanceSquared(int r, int g, int b) {
    int dr = this.r - r;
    int dg = this.g - g;
    int db = this.b - b;
    return dr * dr + dg * dg + db * db;
  }

  /** Channel {@code c}: 0 red, 1 green, 2 blue. */
  public int channel(int c) {
    return switch (c) {
      case 0 -> r;
      case 1 -> g;
      case 2 -> b;
      default -> throw new IllegalArgumentException("channel " + c + " of RGB");
    };
  }
}
