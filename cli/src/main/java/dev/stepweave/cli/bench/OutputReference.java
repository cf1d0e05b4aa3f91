package dev.stepweave.cli.bench;

import dev.stepweave.tensor.Tensor;
import java.util.HashMap;
import java.util.Map;

/**
 * Each request's pixels from the first time it was served one at a time: what its pixels in every
 * other run of the workload are compared with. Only the reference is kept, so a run's outputs can
 * be let go as soon as they are compared (a 480p×81 video is 388 MB of pixels).
 */
public final class OutputReference {
  private final Map<String, Tensor> pixels = new HashMap<>();

  /**
   * How far {@code output} is from the reference of request {@code requestId}; the first
   * one-at-a-time output of a request becomes its reference.
   *
   * @throws IllegalStateException when a batching mode serves a request before it was ever served
   *     one at a time
   */
  public Deviation compare(ServingMode mode, String requestId, Tensor output) {
    Tensor reference = pixels.get(requestId);
    if (reference != null) {
      return Deviation.between(output, reference);
    }
    if (mode != ServingMode.SERIAL) {
      throw new IllegalStateException(
          "request " + requestId + " was served with " + mode.label() + " before one at a time");
    }
    pixels.put(requestId, output);
    return Deviation.NONE;
  }
}
