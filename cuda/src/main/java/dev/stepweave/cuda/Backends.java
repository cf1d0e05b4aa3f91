package dev.stepweave.cuda;

import dev.stepweave.cuda.driver.CudaLibraries;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.function.Consumer;

/** Picks the best backend on this machine: CUDA when it works, else the CPU with a notice. */
public final class Backends {
  private Backends() {}

  /**
   * A {@link CudaBackend} on device 0 when the CUDA libraries are present and a device opens;
   * otherwise a {@link CpuBackend}, after sending {@code notice} one line saying why.
   */
  public static Backend best(Consumer<String> notice) {
    return best(notice, Precision.F32);
  }

  /** Like {@link #best(Consumer)}, a CUDA backend computing in {@code precision}. */
  public static Backend best(Consumer<String> notice, Precision precision) {
    Availability a = availability(precision);
    if (a.backend() != null) {
      return a.backend();
    }
    notice.accept(a.reason());
    return new CpuBackend();
  }

  /** A CUDA backend, or the one-line reason there is none ("CUDA not available: ..."). */
  public record Availability(CudaBackend backend, String reason) {}

  public static Availability availability() {
    return availability(Precision.F32);
  }

  /** A CUDA backend computing in {@code precision}, or the reason there is none. */
  public static Availability availability(Precision precision) {
    CudaLibraries.Probe probe = CudaLibraries.probe();
    if (!probe.found()) {
      return new Availability(null, probe.notice());
    }
    probe.libraries().get().makeCurrent();
    try {
      return new Availability(CudaBackend.open(0, precision), "");
    } catch (RuntimeException | LinkageError e) {
      return new Availability(null, "CUDA not available: " + e.getMessage());
    }
  }
}
