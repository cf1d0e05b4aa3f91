package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --artifact-ttl} and {@code --max-artifact-bytes}: old and over-quota videos are removed
 * oldest first, never while downloaded; {@code DELETE} removes the file and the row; disk use is a
 * metric.
 */
@Timeout(120)
class RetentionTest {
  @TempDir Path tmp;

  static Map<String, Object> video(int seed) {
    return Map.of(
        "prompt",
        "a red fox",
        "size",
        "48x32",
        "seed",
        seed,
        "num_inference_steps",
        2,
        "num_frames",
        5,
        "fps",
        8,
        "guidance_scale",
        1.0);
  }

  @Test
  void aVideoPastItsTtlIsRemovedButNotWhileItIsDownloaded() throws Exception {
    StoreConfig store = StoreConfig.defaults().withArtifactTtl(Duration.ofSeconds(1));
    try (Harness h = new Harness(tmp.resolve("a"), ServerConfig.defaults(), store)) {
      String id = h.createVideo(video(1));
      var done = h.awaitTerminal(id);
      long expires = done.get("expires_at").asLong();
      long completed = done.get("completed_at").asLong();
      assertTrue(expires >= completed && expires <= completed + 2, done::toString);
      Path file = h.server.artifactDir().resolve(id + ".mp4");
      Jobs jobs = h.server.jobs();
      try (Jobs.Download open = jobs.download(jobs.video(id, ""))) {
        Harness.sleep(2500); // two sweeps past the TTL
        assertTrue(Files.exists(open.file()), "kept while a client downloads it");
      }
      await(() -> !Files.exists(file), "the expired video was not removed");
      Harness.Reply gone = h.get("/v1/videos/" + id + "/content");
      assertEquals(410, gone.status(), gone::text);
      assertEquals("video_expired", gone.json().at("/error/code").asText());
      assertEquals("completed", h.get("/v1/videos/" + id).json().get("status").asText());
      String metrics = h.get("/metrics").text();
      assertEquals(0, metric(metrics, "stepweave_artifact_bytes"), metrics);
      assertEquals(1, metric(metrics, "stepweave_artifacts_removed_total"), metrics);
    }
  }

  @Test
  void overTheQuotaTheOldestVideosGoFirst() throws Exception {
    // The same request twice: two files of one size (the content sets an MP4's size).
    long one = Harness.serialVideo(tmp, "a red fox", paramsOfSeed(1)).length;
    StoreConfig store = StoreConfig.defaults().withMaxArtifactBytes(one + one / 2);
    try (Harness h = new Harness(tmp.resolve("q"), ServerConfig.defaults(), store)) {
      String first = h.createVideo(video(1));
      h.awaitTerminal(first);
      await(() -> diskUse(h) == one, "one video is " + one + " bytes");
      String second = h.createVideo(video(1));
      h.awaitTerminal(second);
      Path dir = h.server.artifactDir();
      await(() -> !Files.exists(dir.resolve(first + ".mp4")), "the oldest was not removed");
      assertTrue(Files.exists(dir.resolve(second + ".mp4")), "the newest is kept");
      assertEquals(410, h.get("/v1/videos/" + first + "/content").status());
      assertEquals(200, h.get("/v1/videos/" + second + "/content").status());
      await(() -> diskUse(h) == one, "disk use after the removal");
    }
  }

  @Test
  void deletingAFinishedVideoRemovesItsFileAndRow() throws Exception {
    try (Harness h =
        new Harness(tmp.resolve("d"), ServerConfig.defaults(), StoreConfig.defaults())) {
      String id = h.createVideo(video(3));
      h.awaitTerminal(id);
      Path file = h.server.artifactDir().resolve(id + ".mp4");
      assertTrue(Files.exists(file));
      assertEquals(200, h.delete("/v1/videos/" + id).status());
      assertFalse(Files.exists(file));
      assertEquals(Optional.empty(), h.server.jobs().rows().job(id));
      assertEquals(Optional.empty(), h.server.jobs().rows().artifact(id));
      assertEquals(404, h.get("/v1/videos/" + id).status());
    }
  }

  static dev.stepweave.core.request.DiffusionParams paramsOfSeed(int seed) {
    // The settings video(seed) asks for.
    return new dev.stepweave.core.request.DiffusionParams(
        2, 1.0, seed, 48, 32, 5, 8, "", Optional.empty(), Optional.empty());
  }

  static double diskUse(Harness h) {
    return metric(h.get("/metrics").text(), "stepweave_artifact_bytes");
  }

  /** An unlabelled series' value (the Prometheus client writes doubles); NaN when absent. */
  static double metric(String exposition, String series) {
    for (String line : exposition.split("\n")) {
      if (line.startsWith(series + " ")) {
        return Double.parseDouble(line.substring(line.indexOf(' ') + 1));
      }
    }
    return Double.NaN;
  }

  static void await(BooleanSupplier done, String message) {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, message);
      Harness.sleep(20);
    }
  }
}
