package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineStats;
import dev.stepweave.core.runtime.RequestHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** The interleave gate's check, shared by the tests of every Wan variant. */
final class ServedAlone {
  private ServedAlone() {}

  /** The request's video frames, waiting at most two minutes. */
  static float[] frames(RequestHandle h) throws Exception {
    return h.result()
        .get(120, TimeUnit.SECONDS)
        .artifact(Artifact.VideoArtifact.class)
        .frames()
        .toFloatArray();
  }

  /** Units that ran in a call with others (the batch-size histogram's first bound is 1). */
  static long batchedUnits(EngineStats s) {
    return s.batchSizes().count() - s.batchSizes().cumulativeCounts()[0];
  }

  /**
   * Serves {@code requests} one at a time on one engine, then all at once on another, and asserts
   * that each request's frames are the same bit for bit.
   *
   * @return the units of the concurrent run that shared a call
   */
  static long assertConcurrentRunGivesSerialFrames(Supplier<Engine> engines, List<Request> requests)
      throws Exception {
    List<float[]> serial = new ArrayList<>();
    try (Engine engine = engines.get()) {
      for (Request r : requests) {
        serial.add(frames(engine.submit(r)));
      }
    }
    try (Engine engine = engines.get()) {
      List<RequestHandle> hs = new ArrayList<>();
      for (Request r : requests) {
        hs.add(engine.submit(r));
      }
      for (int i = 0; i < hs.size(); i++) {
        assertArrayEquals(serial.get(i), frames(hs.get(i)), "request " + requests.get(i).id());
      }
      return batchedUnits(engine.stats());
    }
  }
}
