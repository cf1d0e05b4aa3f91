package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.util.stream.IntStream;

/**
 * Small helpers of the host-side backward rules: the values of a tensor wherever it lives,
 * conversions between their double accumulators and float gradients, and their elementwise loops
 * run in parallel.
 */
final class Host {
  /** Elements per parallel task: large enough that a task outweighs its scheduling. */
  private static final int CHUNK = 1 << 14;

  private Host() {}

  /** The backend that computes on {@code t}'s memory: the forward's, or the host's. */
  static Backend backendFor(Backend forward, Backend host, Tensor t) {
    return t.device().kind() == Device.Kind.CPU ? host : forward;
  }

  /** {@code t}'s elements in row-major order, downloaded from {@code device} when it holds them. */
  static float[] values(Backend device, Tensor t) {
    return (t.device().kind() == Device.Kind.CPU ? t : device.download(t)).toFloatArray();
  }

  /** A loop body over elements {@code [from, to)}. */
  @FunctionalInterface
  interface Range {
    void run(int from, int to);
  }

  /**
   * Runs {@code body} over {@code [0, n)} in chunks on the common pool. For loops whose elements
   * are independent (each writes only its own outputs), so the result is the same bits whatever the
   * threads — the serial passes between the parallel kernels otherwise bound a CPU training step.
   */
  static void parallel(int n, Range body) {
    int chunks = (n + CHUNK - 1) / CHUNK;
    if (chunks <= 1) {
      body.run(0, n);
      return;
    }
    IntStream.range(0, chunks)
        .parallel()
        .forEach(c -> body.run(c * CHUNK, Math.min(n, (c + 1) * CHUNK)));
  }

  static float[] floats(double[] values) {
    float[] out = new float[values.length];
    for (int i = 0; i < values.length; i++) {
      out[i] = (float) values[i];
    }
    return out;
  }
}
