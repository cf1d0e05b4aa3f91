package dev.stepweave.cuda.ops;

import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.DeviceRates;
import dev.stepweave.tensor.Tensor;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * Measures a device's rates for the cost model: an 8192³ GEMM in the activation dtype and a 1 GiB
 * device copy, best of three after a warm-up (CUDA events), about 0.1 s.
 */
public final class RateProbe {
  private static final int GEMM_SIZE = 8192;

  private RateProbe() {}

  /** The rates, measured on {@code tensors}' device in a scope of its own (nothing is kept). */
  public static DeviceRates measure(
      CudaOps ops, DeviceTensors tensors, MemoryScope scope, DType dtype) {
    int n = GEMM_SIZE;
    Tensor x = tensors.zeros(dtype, n, n);
    Tensor w = tensors.zeros(dtype, n, n);
    float gemmMs = best(tensors, () -> ops.matrix().linear(x, w, null, false), scope, x, w);
    Tensor big = tensors.zeros(DType.F32, 256, 1024, 1024);
    float copyMs = best(tensors, () -> tensors.convert(big, DType.F32), scope, big);
    scope.releaseExcept();
    double flops = 2.0 * n * n * n;
    double bytes = 2.0 * big.byteSize();
    return new DeviceRates(
        flops / gemmMs,
        bytes / copyMs,
        String.format(
            Locale.ROOT,
            "%s GEMM %.0f TFLOP/s, copy %.0f GB/s (measured)",
            dtype,
            flops / gemmMs / 1e9,
            bytes / copyMs / 1e6));
  }

  /** The best of three timings of {@code work} after a warm-up, its results released. */
  private static float best(
      DeviceTensors tensors, Supplier<Tensor> work, MemoryScope scope, Tensor... inputs) {
    work.get();
    scope.releaseExcept(inputs);
    float best = Float.MAX_VALUE;
    for (int i = 0; i < 3; i++) {
      best = Math.min(best, tensors.context().time(work::get));
      scope.releaseExcept(inputs);
    }
    return best;
  }
}
