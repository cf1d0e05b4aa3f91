package dev.stepweave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Request;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The benchmark's workloads: deterministic, and shaped as their mix says. */
class BenchWorkloadTest {

  @Test
  void theSameSeedGivesTheSameRequestsAndAnotherSeedOthers() {
    assertEquals(
        Workload.generate(Mix.VIDEO_HEAVY, 16, 42, "v"),
        Workload.generate(Mix.VIDEO_HEAVY, 16, 42, "v"));
    assertNotEquals(
        Workload.generate(Mix.VIDEO_HEAVY, 16, 42, "v"),
        Workload.generate(Mix.VIDEO_HEAVY, 16, 43, "v"));
  }

  @Test
  void anImageHeavyMixIsMostlyImagesAndAVideoHeavyOneMostlyVideos() {
    Workload images = Workload.generate(Mix.IMAGE_HEAVY, 16, 1, "i");
    Workload videos = Workload.generate(Mix.VIDEO_HEAVY, 16, 1, "v");
    assertEquals(12, images.imageCount());
    assertEquals(4, videos.imageCount());
    // Even the smallest workloads hold both kinds.
    assertEquals(1, Workload.generate(Mix.VIDEO_HEAVY, 2, 1, "s").imageCount());
    assertEquals(2, Workload.generate(Mix.IMAGE_HEAVY, 3, 1, "s").imageCount());
  }

  @Test
  void requestsAreValidWithUniqueIdsAndTheirTaskFollowsTheFrameCount() {
    Workload w = Workload.generate(Mix.IMAGE_HEAVY, 24, 7, "img");
    Set<String> ids = w.requests().stream().map(Request::id).collect(Collectors.toSet());
    assertEquals(24, ids.size());
    for (Request r : w.requests()) {
      r.validate();
      int frames = r.params().frames();
      assertEquals(frames == 1 ? TaskType.T2I : TaskType.T2V, r.task(), r.id());
      assertEquals(0, (frames - 1) % 4, "frames 4k+1: " + frames);
      assertTrue(r.params().width() % 16 == 0 && r.params().height() % 16 == 0, r.id());
    }
    assertEquals(w.requests().stream().mapToInt(r -> r.params().steps()).sum(), w.totalSteps());
  }
}
