package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.stepweave.tensor.Precision;

/** The one CUDA backend the GPU tests share (opening a context and loading kernels costs time). */
public final class Gpu {
  private static Backends.Availability availability;
  private static CudaBackend bf16;

  private Gpu() {}

  /** The shared backend; the test is skipped, with the reason, when there is no usable GPU. */
  public static synchronized CudaBackend backend() {
    if (availability == null) {
      availability = Backends.availability();
    }
    assumeTrue(availability.backend() != null, availability.reason());
    return availability.backend();
  }

  /** A second backend in {@link Precision#BF16} on the same device. */
  public static synchronized CudaBackend bf16() {
    backend();
    if (bf16 == null) {
      bf16 = CudaBackend.open(0, Precision.BF16);
    }
    return bf16;
  }
}
