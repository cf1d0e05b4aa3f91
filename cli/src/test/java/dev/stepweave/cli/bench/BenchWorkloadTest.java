package dev.stepweave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Request;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The benchmark's workloads: deterministic, and shaped as their traffic says. */
class BenchWorkloadTest {

  /** A request's shape as {@code WIDTHxHEIGHTxFRAMES}. */
  private static String shape(Request r) {
    return r.params().width() + "x" + r.params().height() + "x" + r.params().frames();
  }

  private static Map<String, Long> shapes(Workload w) {
    return w.requests().stream()
        .collect(Collectors.groupingBy(BenchWorkloadTest::shape, Collectors.counting()));
  }

  @Test
  void theSameSeedGivesTheSameRequestsAndAnotherSeedOthers() {
    for (Traffic t : Traffic.values()) {
      assertEquals(Workload.generate(t, 16, 42, "v"), Workload.generate(t, 16, 42, "v"), t.name());
      assertNotEquals(
          Workload.generate(t, 16, 42, "v"), Workload.generate(t, 16, 43, "v"), t.name());
    }
  }

  @Test
  void anImageHeavyMixIsMostlyImagesAndAVideoHeavyOneMostlyVideos() {
    Workload images = Workload.generate(Traffic.IMAGE_HEAVY, 16, 1, "i");
    Workload videos = Workload.generate(Traffic.VIDEO_HEAVY, 16, 1, "v");
    assertEquals(12, images.imageCount());
    assertEquals(4, videos.imageCount());
    // Even the smallest workloads hold both kinds.
    assertEquals(1, Workload.generate(Traffic.VIDEO_HEAVY, 2, 1, "s").imageCount());
    assertEquals(2, Workload.generate(Traffic.IMAGE_HEAVY, 3, 1, "s").imageCount());
  }

  @Test
  void eachRealShapeWorkloadHoldsOnlyTheShapeItsNameSays() {
    Map<Traffic, String> expected =
        Map.of(
            Traffic.IMAGES_480P, "832x480x1",
            Traffic.IMAGES_1024, "1024x1024x1",
            Traffic.VIDEO_256X33, "256x256x33",
            Traffic.VIDEO_480P, "832x480x81");
    expected.forEach(
        (traffic, shape) -> {
          Workload w = Workload.generate(traffic, 12, 3, "r");
          assertEquals(Map.of(shape, 12L), shapes(w), traffic.cliName());
          for (Request r : w.requests()) {
            assertEquals(r.params().frames() == 1 ? TaskType.T2I : TaskType.T2V, r.task());
            assertEquals(5.0, r.params().guidance(), r.id());
            int steps = r.params().steps();
            assertTrue(
                traffic == Traffic.VIDEO_480P
                    ? steps == 6 || steps == 8
                    : steps == 20 || steps == 30,
                r.id() + " has " + steps + " steps");
          }
          // Both step counts are drawn.
          assertEquals(2, w.requests().stream().map(r -> r.params().steps()).distinct().count());
        });
  }

  @Test
  void theMixedWorkloadHoldsTheFourRealShapesInTheirShares() {
    assertEquals(
        Map.of("832x480x1", 10L, "1024x1024x1", 4L, "256x256x33", 5L, "832x480x81", 1L),
        shapes(Workload.generate(Traffic.MIXED, 20, 9, "m")));
    // Four requests: one of each, though 480p videos are a twentieth of the traffic.
    assertEquals(
        Set.of("832x480x1", "1024x1024x1", "256x256x33", "832x480x81"),
        shapes(Workload.generate(Traffic.MIXED, 4, 9, "m")).keySet());
  }

  @Test
  void requestsAreValidWithUniqueIdsAndTheirTaskFollowsTheFrameCount() {
    for (Traffic t : Traffic.values()) {
      Workload w = Workload.generate(t, 24, 7, "img");
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
      // Guidance 5 everywhere: every step is a conditional and an unconditional row.
      assertEquals(2 * w.totalSteps(), w.totalRows());
    }
  }

  @Test
  void workloadsAreNamedAsOnTheCommandLine() {
    Map<String, Traffic> byName =
        List.of(Traffic.values()).stream()
            .collect(Collectors.toMap(Traffic::cliName, Function.identity()));
    assertEquals(
        Set.of(
            "image-heavy",
            "video-heavy",
            "images-480p",
            "images-1024",
            "video-256x33",
            "video-480p",
            "mixed"),
        byName.keySet());
    byName.forEach((name, t) -> assertEquals(t, Traffic.byName(name)));
    var e = assertThrows(IllegalArgumentException.class, () -> Traffic.byName("audio"));
    assertEquals(
        "unknown workload 'audio' (available: image-heavy, video-heavy, images-480p, images-1024,"
            + " video-256x33, video-480p, mixed)",
        e.getMessage());
  }
}
