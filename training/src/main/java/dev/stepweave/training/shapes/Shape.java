package dev.stepweave.training.shapes;

/** The object's outline: a ball is a disk, a square an axis-aligned square. */
public enum Shape implements Word {
  BALL,
  SQUARE
}
