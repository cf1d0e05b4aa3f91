package dev.stepweave.training.shapes;

import java.util.Optional;

/**
 * What the judge saw in a clip. The background is always estimated; the object's attributes are
 * empty when no object was found (and the direction also when it did not move far enough to tell).
 */
public record ShapeEstimate(
    Background background,
    Optional<ObjectColor> color,
    Optional<Shape> shape,
    Optional<Direction> direction) {}
