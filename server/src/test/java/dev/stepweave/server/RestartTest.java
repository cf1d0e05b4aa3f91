package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server stopped and started again on the same artifact directory: completed jobs stay listed and
 * downloadable, a running one resumes from its checkpoint to the same frames as an uninterrupted
 * run, one without a checkpoint fails as {@code interrupted}, and the start reconciles the store
 * with the files.
 */
@Timeout(120)
class RestartTest {
  /** A drain that stops running jobs at once (they stay resumable). */
  static final ServerConfig QUICK_DRAIN = ServerConfig.defaults().withDrainTimeout(Duration.ZERO);

  static final StoreConfig EVERY_STEP =
      StoreConfig.defaults().withCheckpointInterval(Duration.ZERO);

  @TempDir Path tmp;

  @Test
  void completedJobsAreListedAndDownloadableAfterARestart() throws Exception {
    Path dir = tmp.resolve("artifacts");
    String id;
    byte[] before;
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      id = h.createVideo(Map.of("prompt", "a red fox", "size", "48x32", "seed", 3));
      assertEquals("completed", h.awaitTerminal(id).get("status").asText());
      before = h.get("/v1/videos/" + id + "/content").body();
    }
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      assertTrue(h.server.recoverySummary().startsWith("1 videos kept, 0 missing"));
      JsonNode v = h.get("/v1/videos/" + id).json();
      assertEquals("completed", v.get("status").asText(), v::toString);
      assertEquals("a red fox", v.get("prompt").asText());
      assertEquals(3, v.get("seed").asLong());
      assertEquals(100, v.get("progress").asInt());
      assertEquals(List.of(id), listed(h));
      Harness.Reply content = h.get("/v1/videos/" + id + "/content");
      assertEquals(200, content.status());
      assertArrayEquals(before, content.body(), "the very file written before the restart");
      assertEquals(200, h.delete("/v1/videos/" + id).status());
      assertEquals(404, h.get("/v1/videos/" + id).status());
      assertFalse(Files.exists(dir.resolve(id + ".mp4")));
    }
  }

  @Test
  void aRunningJobResumesFromItsCheckpointToTheFramesOfAnUninterruptedRun() throws Exception {
    Path dir = tmp.resolve("artifacts");
    String id;
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      // No seed given: the one drawn must be what the restarted run uses.
      id =
          h.createVideo(Map.of("prompt", "a slow fox", "size", "48x32", "num_inference_steps", 60));
      h.awaitProgress(id);
      awaitFile(dir.resolve(id + ".checkpoint"));
    } // the drain's timeout stops it at a step boundary; its newest state is flushed
    assertTrue(Files.exists(dir.resolve(id + ".checkpoint")), "the checkpoint outlives the stop");
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      assertTrue(
          h.server.recoverySummary().contains("1 jobs resumed from checkpoints"),
          h.server.recoverySummary());
      JsonNode done = h.awaitTerminal(id);
      assertEquals("completed", done.get("status").asText(), done::toString);
      Harness.Reply content = h.get("/v1/videos/" + id + "/content");
      assertEquals(200, content.status());
      byte[] alone = Harness.serialVideo(tmp, "a slow fox", Harness.paramsOf(done));
      assertArrayEquals(Harness.decoded(tmp, alone), Harness.decoded(tmp, content.body()));
      assertFalse(Files.exists(dir.resolve(id + ".checkpoint")), "removed once completed");
    }
  }

  @Test
  void aRunningJobWithoutACheckpointFailsAsInterrupted() throws Exception {
    Path dir = tmp.resolve("artifacts");
    String id;
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      id =
          h.createVideo(Map.of("prompt", "a slow fox", "size", "48x32", "num_inference_steps", 60));
      h.awaitProgress(id);
    }
    // As after a kill -9 before the first checkpoint file was written.
    Files.deleteIfExists(dir.resolve(id + ".checkpoint"));
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      JsonNode v = h.get("/v1/videos/" + id).json();
      assertEquals("failed", v.get("status").asText(), v::toString);
      assertEquals("interrupted", v.at("/error/code").asText(), v::toString);
      assertTrue(
          v.at("/error/message").asText().contains("no checkpoint")
              || v.at("/error/message").asText().contains("before any checkpoint"),
          v::toString);
      assertEquals(409, h.get("/v1/videos/" + id + "/content").status());
    }
  }

  /**
   * A job checkpointed at every step leaves no checkpoint file once it has ended, however quickly
   * it ran: one-step jobs may end before the call that created them returns.
   */
  @Test
  void noCheckpointFileOutlivesAFinishedJob() throws Exception {
    Path dir = tmp.resolve("artifacts");
    List<String> ids = new java.util.ArrayList<>();
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      for (int i = 0; i < 24; i++) {
        ids.add(
            h.createVideo(
                Map.of("prompt", "quick " + i, "size", "16x16", "num_inference_steps", 1)));
      }
      for (String id : ids) {
        assertEquals("completed", h.awaitTerminal(id).get("status").asText());
      }
    }
    try (var files = Files.list(dir)) {
      List<String> left =
          files
              .map(p -> p.getFileName().toString())
              .filter(n -> n.endsWith(ArtifactStore.CHECKPOINT) || n.endsWith(".tmp"))
              .toList();
      assertEquals(List.of(), left, "checkpoint files of ended jobs");
    }
  }

  @Test
  void theStartReconcilesTheStoreWithTheFiles() throws Exception {
    Path dir = tmp.resolve("artifacts");
    String kept;
    String lost;
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      kept = h.createVideo(Map.of("prompt", "a red fox", "size", "48x32", "seed", 1));
      lost = h.createVideo(Map.of("prompt", "a red fox", "size", "48x32", "seed", 2));
      h.awaitTerminal(kept);
      h.awaitTerminal(lost);
    }
    Files.delete(dir.resolve(lost + ".mp4"));
    Path strayVideo = dir.resolve("video_" + "0".repeat(32) + ".mp4");
    Path strayCheckpoint = dir.resolve("video_" + "1".repeat(32) + ".checkpoint");
    Path strayTemp = dir.resolve(".checkpoint-123.tmp");
    Path notOurs = dir.resolve("notes.txt");
    for (Path p : List.of(strayVideo, strayCheckpoint, strayTemp, notOurs)) {
      Files.writeString(p, "x");
    }
    List<String> before;
    try (var files = Files.list(dir)) {
      before = files.map(p -> p.getFileName().toString()).sorted().toList();
    }
    try (Harness h = new Harness(dir, QUICK_DRAIN, EVERY_STEP)) {
      assertEquals(
          "1 videos kept, 1 missing, 0 jobs resumed from checkpoints, 0 restarted,"
              + " 0 interrupted, 3 stray files removed",
          h.server.recoverySummary(),
          "kept " + kept + ", lost " + lost + "; the files before the start: " + before);
      assertEquals(200, h.get("/v1/videos/" + kept + "/content").status());
      Harness.Reply missing = h.get("/v1/videos/" + lost + "/content");
      assertEquals(410, missing.status(), missing::text);
      assertEquals("video_missing", missing.json().at("/error/code").asText());
      assertEquals("completed", h.get("/v1/videos/" + lost).json().get("status").asText());
      for (Path p : List.of(strayVideo, strayCheckpoint, strayTemp)) {
        assertFalse(Files.exists(p), p + " has no row: removed");
      }
      assertTrue(Files.exists(notOurs), "a file not named like ours is left alone");
    }
  }

  static List<String> listed(Harness h) {
    return StreamSupport.stream(h.get("/v1/videos").json().get("data").spliterator(), false)
        .map(v -> v.get("id").asText())
        .toList();
  }

  static void awaitFile(Path f) {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!Files.exists(f) && System.nanoTime() < deadline) {
      Harness.sleep(5);
    }
    assertTrue(Files.exists(f), f + " was not written");
  }
}
