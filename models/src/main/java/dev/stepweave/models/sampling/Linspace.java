package dev.stepweave.models.sampling;

/**
 * {@code numpy.linspace(start, stop, num)} with numpy's exact arithmetic (each value is {@code i ·
 * step + start}, the last one is {@code stop}), so schedules match the reference to the bit.
 */
final class Linspace {
  private Linspace() {}

  static double[] of(double start, double stop, int num) {
    if (num < 1) {
      throw new IllegalArgumentException("linspace needs at least one value, got " + num);
    }
    double[] out = new double[num];
    if (num == 1) {
      out[0] = start;
      return out;
    }
    int div = num - 1;
    double delta = stop - start;
    double step = delta / div;
    for (int i = 0; i < num; i++) {
      out[i] = step == 0 ? i / (double) div * delta + start : i * step + start;
    }
    out[num - 1] = stop;
    return out;
  }
}
