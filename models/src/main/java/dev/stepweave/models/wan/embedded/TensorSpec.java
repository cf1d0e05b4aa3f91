package dev.stepweave.models.wan.embedded;

import java.util.Arrays;

/**
 * One tensor of a generated checkpoint: its name and shape, and the distribution its values are
 * drawn from (uniform, with this mean and standard deviation; a constant when {@code std} is 0).
 * With {@code smoothSpatial} the last two (3×3 spatial) dimensions are a fixed binomial blur scaled
 * by one random value per leading index: such convolutions mix channels randomly but keep images
 * spatially smooth.
 */
record TensorSpec(String name, int[] shape, float mean, float std, boolean smoothSpatial) {
  /** Bias scale: small enough not to dominate, non-zero so every tensor carries information. */
  static final float BIAS_STD = 0.02f;

  TensorSpec {
    shape = shape.clone();
    if (smoothSpatial
        && (shape.length < 2 || shape[shape.length - 1] != 3 || shape[shape.length - 2] != 3)) {
      throw new IllegalArgumentException(name + ": a smooth spatial kernel must end in 3×3");
    }
  }

  TensorSpec(String name, int[] shape, float mean, float std) {
    this(name, shape, mean, std, false);
  }

  /**
   * A 3×3-spatial convolution weight whose spatial part is a blur: unit-variance channel mixing
   * over {@code channelFanIn} (input channels × temporal taps) inputs.
   */
  static TensorSpec smoothSpatial(String name, int channelFanIn, int... shape) {
    return new TensorSpec(name, shape, 0f, (float) (1 / Math.sqrt(channelFanIn)), true);
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
        && Float.compare(std, t.std) == 0
        && smoothSpatial == t.smoothSpatial;
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
