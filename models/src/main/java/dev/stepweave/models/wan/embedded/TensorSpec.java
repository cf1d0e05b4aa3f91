package dev.stepweave.models.wan.embedded;

import java.util.Arrays;

/**
 * One tensor of a generated checkpoint: its name and shape, and the distribution its values are
 * drawn from (uniform, with this mean and standard deviation; a constant when {@code std} is 0).
 */
record TensorSpec(String name, int[] shape, float mean, float std) {
  /** Bias scale: small enough not to dominate, non-zero so every tensor carries information. */
  static final float BIAS_STD = 0.02f;

  TensorSpec {
    shape = shape.clone();
  }

  /** A weight read by a dot product over {@code fanIn} inputs: unit-variance outputs. */
  static TensorSpec fanIn(String name, int fanIn, int... shape) {
    return new TensorSpec(name, shape, 0f, (float) (1 / Math.sqrt(fanIn)));
  }

  static TensorSpec normal(String name, float std, int... shape) {
    return new TensorSpec(name, shape, 0f, std);
  }

  static TensorSpec bias(String name, int size) {
    return new TensorSpec(name, new int[] {size}, 0f, BIAS_STD);
  }

  static TensorSpec constant(String name, float value, int... shape) {
    return new TensorSpec(name, shape, value, 0f);
  }

  @Override
  public int[] shape() {
    return shape.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TensorSpec t
        && name.equals(t.name)
        && Arrays.equals(shape, t.shape)
        && Float.compare(mean, t.mean) == 0
        && Float.compare(std, t.std) == 0;
  }

  @Override
  public int hashCode() {
    return name.hashCode() * 31 + Arrays.hashCode(shape);
  }

  @Override
  public String toString() {
    return name + Arrays.toString(shape) + " ~ U(mean " + mean + ", std " + std + ")";
  }
}
