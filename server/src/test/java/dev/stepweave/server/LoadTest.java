package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.request.DiffusionParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * 24 concurrent clients through HTTP: 16 videos (5 of them deleted, so cancelled, 2 while queued
 * and 3 midway) and 8 image calls. Every job ends, none is lost, cancellations hold, and every
 * output equals the same request run alone.
 */
@Timeout(120)
class LoadTest {
  @TempDir Path tmp;

  /** What one client did: a video id (with whether it cancelled it) or an image call's PNGs. */
  record Outcome(String videoId, String cancelled, String prompt, long seed, List<byte[]> images) {}

  @Test
  void concurrentMixedRequestsAllFinishAndMatchSerialRuns() throws Exception {
    int clients = 24;
    CountDownLatch go = new CountDownLatch(1);
    // Closed in reverse order: the pool waits for its clients, then the harness drains their jobs.
    try (Harness h = new Harness(tmp.resolve("artifacts"));
        ExecutorService pool = Executors.newFixedThreadPool(clients)) {
      List<Future<Outcome>> futures = new ArrayList<>();
      for (int i = 0; i < clients; i++) {
        int n = i;
        Callable<Outcome> client =
            () -> {
              go.await();
              return n < 16 ? video(h, n) : image(h, n);
            };
        futures.add(pool.submit(client));
      }
      go.countDown();
      List<Outcome> outcomes = new ArrayList<>();
      for (Future<Outcome> f : futures) {
        outcomes.add(f.get());
      }

      Set<String> listed = new HashSet<>();
      h.get("/v1/videos?limit=100")
          .json()
          .get("data")
          .forEach(v -> listed.add(v.get("id").asText()));
      int completed = 0;
      int cancelled = 0;
      int images = 0;
      for (Outcome o : outcomes) {
        if (o.videoId() == null) {
          for (int k = 0; k < o.images().size(); k++) {
            DiffusionParams p =
                new DiffusionParams(
                    2, 1.0, o.seed() + k, 32, 32, 1, 8, "", Optional.empty(), Optional.empty());
            assertArrayEquals(Harness.serialImage(tmp, o.prompt(), p), o.images().get(k));
            images++;
          }
          continue;
        }
        if (o.cancelled() != null) {
          // Deleted while queued or running: gone at once (the engine's counter below says each
          // was cancelled, not completed).
          assertFalse(listed.contains(o.videoId()), "deleted video " + o.videoId() + " listed");
          assertEquals(404, h.get("/v1/videos/" + o.videoId()).status());
          cancelled++;
          continue;
        }
        assertTrue(listed.contains(o.videoId()), "video " + o.videoId() + " lost from the list");
        JsonNode v = h.awaitTerminal(o.videoId());
        String status = v.get("status").asText();
        {
          assertEquals("completed", status, v::toString);
          byte[] served = h.get("/v1/videos/" + o.videoId() + "/content").body();
          byte[] alone = Harness.serialVideo(tmp, o.prompt(), Harness.paramsOf(v));
          assertArrayEquals(
              Harness.decoded(tmp, alone), Harness.decoded(tmp, served), "video " + o.videoId());
          completed++;
        }
      }
      assertEquals(11, listed.size());
      assertEquals(11, completed);
      assertEquals(5, cancelled);
      assertEquals(10, images);
      h.awaitMetric("stepweave_requests_cancelled_total 5.0");
      String metrics = h.get("/metrics").text();
      assertTrue(metrics.contains("stepweave_requests_completed_total 21.0"), metrics);
      assertTrue(metrics.contains("stepweave_requests_cancelled_total 5.0"), metrics);
      assertTrue(metrics.contains("stepweave_pending_jobs 0.0"), metrics);
    }
  }

  /** Videos 0–10 complete; 11–12 are cancelled at once, 13–15 once they have made progress. */
  private static Outcome video(Harness h, int n) {
    boolean cancel = n >= 11;
    String prompt = (cancel ? "slow " : "") + "video " + n;
    int frames = 1 + 4 * (n % 3);
    String id =
        h.createVideo(
            Map.of(
                "prompt",
                prompt,
                "seed",
                1000 + n,
                "size",
                (32 + 16 * (n % 2)) + "x32",
                "num_frames",
                frames,
                "num_inference_steps",
                cancel ? 100 : 1 + n % 4));
    if (!cancel) {
      return new Outcome(id, null, prompt, 1000 + n, List.of());
    }
    String when = n < 13 ? "queued" : "midway";
    if (when.equals("midway")) {
      h.awaitProgress(id);
    }
    Harness.Reply deleted = h.delete("/v1/videos/" + id);
    assertEquals(200, deleted.status());
    assertEquals("video.deleted", deleted.json().get("object").asText());
    return new Outcome(id, when, prompt, 1000 + n, List.of());
  }

  /** Images 16–23; every fourth asks for two. */
  private static Outcome image(Harness h, int n) {
    int count = n % 4 == 0 ? 2 : 1;
    String prompt = "image " + n;
    Harness.Reply r =
        h.postJson(
            "/v1/images/generations",
            Map.of(
                "prompt",
                prompt,
                "n",
                count,
                "size",
                "32x32",
                "seed",
                5000 + 10 * n,
                "num_inference_steps",
                2));
    assertEquals(200, r.status(), r::text);
    List<byte[]> pngs = new ArrayList<>();
    r.json()
        .get("data")
        .forEach(d -> pngs.add(Base64.getDecoder().decode(d.get("b64_json").asText())));
    assertEquals(count, pngs.size());
    return new Outcome(null, null, prompt, 5000 + 10 * n, pngs);
  }
}
