package dev.stepweave.training.autograd;

/** Small conversions between the double accumulators of the backward rules and float gradients. */
final class Host {
  private Host() {}

  static float[] floats(double[] values) {
    float[] out = new float[values.length];
    for (int i = 0; i < values.length; i++) {
      out[i] = (float) values[i];
    }
    return out;
  }
}
