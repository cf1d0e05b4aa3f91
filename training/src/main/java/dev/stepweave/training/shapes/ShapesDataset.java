package dev.stepweave.training.shapes;

import java.util.Locale;

/**
 * The synthetic shapes dataset: clip {@code i} of seed {@code s} is one object — a ball or a square
 * of one of five colours — on a plain background of one of three, moving left, right, up or down by
 * at least a third of the frame over the clip. Every clip is a pure function of (seed, index, size,
 * frames), so any clip can be made alone and every machine makes the same bytes.
 *
 * <p>Per clip, uniformly: the four attributes; the object's size, between {@code smallest} and
 * {@code largest} pixels (by default a sixth and a third of the frame's shorter side); the distance
 * it travels, from {@code minTravel} pixels (by default, and at least, a third of the frame along
 * its axis) to as far as it fits; where along that axis the path lies, and where across it the
 * object sits. The object stays one pixel clear of the border throughout, so border pixels are
 * background.
 *
 * @param width at least {@value #MIN_SIDE}
 * @param height at least {@value #MIN_SIDE}
 * @param frames at least 2 (a Wan VAE needs {@code 4k + 1}; 9 is typical)
 * @param smallest the smallest object side (a square's) or diameter (a ball's), in pixels
 * @param largest the largest; it must leave room to travel {@code minTravel} on either axis
 * @param minTravel the shortest distance travelled, in pixels; 0: a third of the frame's axis
 */
public record ShapesDataset(
    long seed, int width, int height, int frames, int smallest, int largest, int minTravel) {
  /** The smallest frame side. */
  public static final int MIN_SIDE = 64;

  private static final int MARGIN = 1; // pixels kept clear at the border
  private static final int SUB = ShapeMotion.SUBPIXELS;

  public ShapesDataset {
    if (width < MIN_SIDE || height < MIN_SIDE) {
      throw new IllegalArgumentException(
          "shapes clips are at least "
              + MIN_SIDE
              + "x"
              + MIN_SIDE
              + ", got "
              + width
              + "x"
              + height);
    }
    if (frames < 1) {
      throw new IllegalArgumentException("shapes clips need 1 frame or more, got " + frames);
    }
    if (smallest < 1 || smallest > largest) {
      throw new IllegalArgumentException(
          "shapes object sizes must be 1 or more, smallest first, got " + smallest + "-" + largest);
    }
    int third = Math.ceilDiv(Math.max(width, height), 3);
    if (minTravel != 0 && minTravel < third) {
      throw new IllegalArgumentException(
          "shapes objects travel at least a third of the frame ("
              + third
              + " pixels here), got a minimum of "
              + minTravel);
    }
    int shorter = Math.min(width, height);
    int travel = minTravel == 0 ? Math.ceilDiv(shorter, 3) : minTravel;
    if (shorter - largest - 2 * MARGIN < travel) {
      throw new IllegalArgumentException(
          "a "
              + largest
              + "-pixel object cannot travel "
              + (minTravel == 0 ? "a third of" : minTravel + " pixels across")
              + " a "
              + width
              + "x"
              + height
              + " frame");
    }
  }

  /**
   * The dataset with the default objects: a sixth to a third of the shorter side, travelling at
   * least a third of the frame.
   */
  public ShapesDataset(long seed, int width, int height, int frames) {
    this(seed, width, height, frames, Math.min(width, height) / 6, Math.min(width, height) / 3, 0);
  }

  /**
   * Whether the objects are the default ones (a dataset id names their settings only otherwise).
   */
  public boolean defaultObjects() {
    return equals(new ShapesDataset(seed, width, height, frames));
  }

  /**
   * What a run's recipe names as its data: the first {@code clips} clips, and the objects' settings
   * where they are not the default ones.
   */
  public String description(int clips) {
    String objects =
        defaultObjects()
            ? ""
            : ", objects "
                + smallest
                + "-"
                + largest
                + " px"
                + (minTravel == 0 ? "" : " travelling " + minTravel + " px or more");
    return String.format(
        Locale.ROOT,
        "shapes seed %d, %dx%d, %d frames, clips 0-%d%s",
        seed,
        width,
        height,
        frames,
        clips - 1,
        objects);
  }

  /** The id of clip {@code index}, as the dataset folder names it. */
  public static String id(int index) {
    return String.format(Locale.ROOT, "shapes-%06d", index);
  }

  /** Clip {@code index} (0 or more). */
  public ShapeSample sample(int index) {
    ShapeMotion motion = motion(index);
    return new ShapeSample(id(index), motion, ShapesRenderer.render(motion));
  }

  /** How clip {@code index} is drawn. */
  public ShapeMotion motion(int index) {
    if (index < 0) {
      throw new IllegalArgumentException("clip index must be 0 or more, got " + index);
    }
    SplitMix64 rng = new SplitMix64(SplitMix64.mix(seed) ^ SplitMix64.mix(index + 1L));
    ShapeCaption caption =
        new ShapeCaption(
            ObjectColor.values()[rng.nextInt(ObjectColor.values().length)],
            Shape.values()[rng.nextInt(Shape.values().length)],
            Direction.values()[rng.nextInt(Direction.values().length)],
            Background.values()[rng.nextInt(Background.values().length)]);
    int size = rng.between(smallest, largest);
    Direction d = caption.direction();
    int along = d.horizontal() ? width : height;
    int across = d.horizontal() ? height : width;
    // Top-left positions that keep the object clear of the border, in sixteenths of a pixel.
    int room = (along - size - 2 * MARGIN) * SUB;
    int shortest = minTravel == 0 ? Math.ceilDiv(along * SUB, 3) : minTravel * SUB;
    int travel = rng.between(shortest, room);
    int low = MARGIN * SUB + rng.nextInt(room - travel + 1);
    int forward = d.dx() + d.dy(); // +1 right or down, −1 left or up
    int start = forward > 0 ? low : low + travel;
    int end = forward > 0 ? low + travel : low;
    int side = MARGIN * SUB + rng.nextInt((across - size - 2 * MARGIN) * SUB + 1);
    return d.horizontal()
        ? new ShapeMotion(caption, width, height, frames, size, start, side, end, side)
        : new ShapeMotion(caption, width, height, frames, size, side, start, side, end);
  }
}
