package dev.stepweave.training.shapes;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a shapes clip shows, and its caption {@code a {color} {shape} moving {direction} on a
 * {background} background}.
 */
public record ShapeCaption(
    ObjectColor color, Shape shape, Direction direction, Background background) {
  /** The caption template, as error messages show it. */
  public static final String TEMPLATE =
      "a {color} {shape} moving {direction} on a {background} background";

  private static final Pattern CAPTION =
      Pattern.compile("a (\\S+) (\\S+) moving (\\S+) on a (\\S+) background");

  public ShapeCaption {
    if (color == null || shape == null || direction == null || background == null) {
      throw new IllegalArgumentException("a shapes caption needs all four attributes");
    }
  }

  /** The caption text. */
  public String text() {
    return "a "
        + color.word()
        + " "
        + shape.word()
        + " moving "
        + direction.word()
        + " on a "
        + background.word()
        + " background";
  }

  /**
   * The attributes of a caption in the template's words (case and runs of whitespace do not
   * matter).
   *
   * @throws IllegalArgumentException naming the caption and what does not fit
   */
  public static ShapeCaption parse(String caption) {
    String normal = caption.strip().replaceAll("\\s+", " ").toLowerCase(Locale.ROOT);
    Matcher m = CAPTION.matcher(normal);
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "not a shapes caption: '" + caption + "' (expected '" + TEMPLATE + "')");
    }
    try {
      return new ShapeCaption(
          Word.parse(ObjectColor.class, "color", m.group(1)),
          Word.parse(Shape.class, "shape", m.group(2)),
          Word.parse(Direction.class, "direction", m.group(3)),
          Word.parse(Background.class, "background", m.group(4)));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("caption '" + caption + "': " + e.getMessage(), e);
    }
  }

  /** Every caption there is (5 colours × 2 shapes × 4 directions × 3 backgrounds = 120). */
  public static List<ShapeCaption> all() {
    List<ShapeCaption> out = new ArrayList<>();
    for (ObjectColor c : ObjectColor.values()) {
      for (Shape s : Shape.values()) {
        for (Direction d : Direction.values()) {
          for (Background b : Background.values()) {
            out.add(new ShapeCaption(c, s, d, b));
          }
        }
      }
    }
    return List.copyOf(out);
  }
}
