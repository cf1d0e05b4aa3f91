package dev.stepweave.tensor;

/**
 * A device's sustained rates, measured on it: what a cost model turns a work unit's FLOPs and bytes
 * into device-ms with before any unit of that kind was timed.
 *
 * @param flopsPerMilli dense GEMM throughput at the backend's activation precision
 * @param bytesPerMilli device memory bandwidth (bytes read plus written)
 * @param how how they were measured, for logs
 */
public record DeviceRates(double flopsPerMilli, double bytesPerMilli, String how) {
  public DeviceRates {
    if (!(flopsPerMilli > 0) || !(bytesPerMilli > 0)) {
      throw new IllegalArgumentException("device rates must be positive");
    }
  }
}
