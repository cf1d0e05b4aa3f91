package dev.stepweave.core.loop;

/**
 * What one work unit needs reserved before it runs.
 *
 * @param predictedDeviceMillis predicted device time, the scheduler's one currency
 * @param residentBytes bytes its loop state keeps resident between steps
 * @param peakActivationBytes worst-case transient bytes while it runs
 * @param cacheBlocks cache blocks it reads or writes
 */
public record ResourceRequest(
    double predictedDeviceMillis, long residentBytes, long peakActivationBytes, int cacheBlocks) {
  public static final ResourceRequest NONE = new ResourceRequest(0, 0, 0, 0);

  public ResourceRequest {
    if (predictedDeviceMillis < 0
        || residentBytes < 0
        || peakActivationBytes < 0
        || cacheBlocks < 0) {
      throw new IllegalArgumentException("negative resource request");
    }
  }
}
