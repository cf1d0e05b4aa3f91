package dev.stepweave.training.shapes;

/**
 * How one shapes clip is drawn: the caption, the clip's size, the object's side (a square's) or
 * diameter (a ball's) in pixels, and its bounding box's top-left corner in the first and the last
 * frame, in sixteenths of a pixel; frames between move it linearly. A one-frame clip is a still:
 * the first frame alone (a VAE trains on stills before clips).
 */
public record ShapeMotion(
    ShapeCaption caption,
    int width,
    int height,
    int frames,
    int size,
    int startX16,
    int startY16,
    int endX16,
    int endY16) {
  /** Sub-pixel units per pixel of the positions. */
  public static final int SUBPIXELS = 16;

  public ShapeMotion {
    if (frames < 1) {
      throw new IllegalArgumentException("a shapes clip needs 1 frame or more, got " + frames);
    }
    if (size < 1 || size > Math.min(width, height)) {
      throw new IllegalArgumentException("object size " + size + " does not fit the frame");
    }
  }

  /** The top-left corner's x at {@code frame}, in sixteenths of a pixel. */
  public int x16(int frame) {
    return startX16 + Math.floorDiv((endX16 - startX16) * frame, Math.max(1, frames - 1));
  }

  /** The top-left corner's y at {@code frame}, in sixteenths of a pixel. */
  public int y16(int frame) {
    return startY16 + Math.floorDiv((endY16 - startY16) * frame, Math.max(1, frames - 1));
  }
}
