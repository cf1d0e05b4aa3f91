package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The one CUDA backend the GPU tests share (opening a context and loading kernels costs time). */
final class Gpu {
  private static Backends.Availability availability;

  private Gpu() {}

  /** The shared backend; the test is skipped, with the reason, when there is no usable GPU. */
  static synchronized CudaBackend backend() {
    if (availability == null) {
      availability = Backends.availability();
    }
    assumeTrue(availability.backend() != null, availability.reason());
    return availability.backend();
  }
}
