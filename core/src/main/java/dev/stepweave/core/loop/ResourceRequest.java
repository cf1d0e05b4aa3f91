package dev.stepweave.core.loop;

/**
 * What one work unit (or, as a request's footprint, a whole request) needs reserved before it runs.
 *
 * @param predictedDeviceMillis predicted device time, the scheduler's one currency; 0 lets the cost
 *     model derive it from {@code flops} and {@code bytesMoved}
 * @param residentBytes bytes its loop state keeps resident between steps
 * @param peakActivationBytes worst-case transient bytes while it runs
 * @param cacheBlocks cache blocks it reads or writes
 * @param flops floating-point operations, the static seed of the cost model
 * @param bytesMoved bytes read and written (weights and activations), the other half of the seed
 */
public record ResourceRequest(
    double predictedDeviceMillis,
    long residentBytes,
    long peakActivationBytes,
    int cacheBlocks,
    double flops,
    double bytesMoved) {
  public static final ResourceRequest NONE = new ResourceRequest(0, 0, 0, 0);

  public ResourceRequest {
    if (predictedDeviceMillis < 0
        || residentBytes < 0
        || peakActivationBytes < 0
        || cacheBlocks < 0
        || flops < 0
        || bytesMoved < 0) {
      throw new IllegalArgumentException("negative resource request");
    }
  }

  /** A request with no static FLOP/byte estimate. */
  public ResourceRequest(
      double predictedDeviceMillis, long residentBytes, long peakActivationBytes, int cacheBlocks) {
    this(predictedDeviceMillis, residentBytes, peakActivationBytes, cacheBlocks, 0, 0);
  }

  /** Resident plus worst-case peak: the memory a work unit may touch. */
  public long memoryBytes() {
    return residentBytes + peakActivationBytes;
  }
}
