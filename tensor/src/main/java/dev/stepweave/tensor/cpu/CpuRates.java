package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DeviceRates;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.function.Supplier;

/**
 * Measures what this machine's CPU backend sustains, once per backend: the FLOP rate of a 384³
 * matrix product and the bandwidth of an elementwise add over 16 MiB operands, each the best of
 * three timed runs after a warm-up. A cost model seeded with them predicts a real model's steps far
 * closer than fixed rates would on a machine of unknown speed (a shared two-core box runs an order
 * of magnitude below a workstation).
 */
final class CpuRates {
  private static final int N = 384;
  private static final int ELEMENTS = 1 << 22;

  private CpuRates() {}

  static DeviceRates measure(Backend cpu) {
    float[] values = new float[N * N];
    Arrays.fill(values, 0.5f);
    Tensor a = Tensor.of(values, N, N);
    float[] flat = new float[ELEMENTS];
    Arrays.fill(flat, 1f);
    Tensor x = Tensor.of(flat, ELEMENTS);
    double matmulMs = bestMillis(() -> cpu.matmul(a, a));
    double addMs = bestMillis(() -> cpu.add(x, x));
    double flopsPerMs = 2.0 * N * N * N / matmulMs;
    double bytesPerMs = 3.0 * ELEMENTS * Float.BYTES / addMs; // two reads, one write
    return new DeviceRates(
        flopsPerMs,
        bytesPerMs,
        String.format(
            java.util.Locale.ROOT,
            "CPU measured at start: %.1f GFLOP/s (%d³ matmul), %.1f GB/s (add)",
            flopsPerMs / 1e6,
            N,
            bytesPerMs / 1e6));
  }

  private static double bestMillis(Supplier<Tensor> op) {
    op.get(); // warm-up: JIT and the thread pool
    double best = Double.MAX_VALUE;
    for (int i = 0; i < 3; i++) {
      long t0 = System.nanoTime();
      op.get();
      best = Math.min(best, (System.nanoTime() - t0) / 1e6);
    }
    return Math.max(best, 1e-3);
  }
}
