package dev.stepweave.training.shapes;

import dev.stepweave.training.data.RgbClip;

/** One clip of the shapes dataset: its id, how it was drawn, and the frames. */
public record ShapeSample(String id, ShapeMotion motion, RgbClip clip) {
  public ShapeCaption caption() {
    return motion.caption();
  }
}
