package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A drain that awaits downloads: the listener stays up, new work gets 503 and reads 200, until
 * every finished video was fetched once (a whole GET of its content: not a HEAD, not a range) or
 * the drain timeout passed; the admin connector's {@code POST /admin/drain} runs the same drain.
 */
@Timeout(120)
class DrainTest {
  static final StoreConfig AWAITING = StoreConfig.defaults().withDrainAwaitingDownloads(true);

  @TempDir Path tmp;

  @Test
  void theDrainEndsOnceEveryFinishedVideoWasFetched() throws Exception {
    ServerConfig config = ServerConfig.defaults().withDrainTimeout(Duration.ofSeconds(60));
    try (Harness h = new Harness(tmp.resolve("a"), config, AWAITING)) {
      String id = h.createVideo(RetentionTest.video(1));
      h.awaitTerminal(id);
      CompletableFuture<Boolean> drained = CompletableFuture.supplyAsync(h.server::drain);
      RetentionTest.await(() -> h.get("/ready").status() == 503, "drain did not start");
      Harness.Reply refused = h.postJson("/v1/videos", RetentionTest.video(2));
      assertEquals(503, refused.status(), refused::text);
      assertEquals("not_accepting", refused.json().at("/error/code").asText());
      assertEquals(200, h.get("/v1/videos/" + id).status());
      assertEquals(200, h.get("/v1/videos").status());
      Harness.sleep(300);
      assertTrue(!drained.isDone(), "the drain waits for the unfetched video");
      long t0 = System.nanoTime();
      assertEquals(200, h.get("/v1/videos/" + id + "/content").status());
      assertTrue(drained.get(10, TimeUnit.SECONDS), "clean drain");
      long waited = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(waited < 5000, "ended " + waited + " ms after the fetch, far before the timeout");
    }
  }

  @Test
  void theAdminDrainKeepsServingAndOnlyAWholeDownloadCountsAsAFetch() throws Exception {
    ServerConfig config = ServerConfig.defaults().withDrainTimeout(Duration.ofSeconds(60));
    try (Harness h = new Harness(tmp.resolve("c"), config, AWAITING)) {
      String id = h.createVideo(RetentionTest.video(1));
      h.awaitTerminal(id);
      Harness.Reply started =
          h.send(
              HttpRequest.newBuilder(URI.create(h.server.adminUri() + "/admin/drain"))
                  .POST(HttpRequest.BodyPublishers.noBody()));
      assertEquals(202, started.status(), started::text);
      RetentionTest.await(() -> h.get("/ready").status() == 503, "drain did not start");
      Harness.Reply refused = h.postJson("/v1/videos", RetentionTest.video(2));
      assertEquals(503, refused.status(), refused::text);
      String content = "/v1/videos/" + id + "/content";
      Harness.Reply head =
          h.send(
              HttpRequest.newBuilder(h.uri(content))
                  .method("HEAD", HttpRequest.BodyPublishers.noBody()));
      assertEquals(200, head.status());
      Harness.Reply range =
          h.send(HttpRequest.newBuilder(h.uri(content)).header("Range", "bytes=0-99").GET());
      assertEquals(206, range.status(), range::text);
      assertEquals(100, range.body().length);
      Harness.sleep(300); // the store's writer would have recorded a fetch by now
      assertNull(lastFetched(h, id), "a HEAD or a range is not a fetch");
      assertEquals(200, h.get(content).status());
      RetentionTest.await(() -> lastFetched(h, id) != null, "the whole download was not recorded");
      assertEquals(200, h.get("/v1/videos/" + id).status(), "reads are served after the drain");
      assertEquals(503, h.postJson("/v1/videos", RetentionTest.video(3)).status());
    }
  }

  private static Instant lastFetched(Harness h, String id) {
    return h.server.jobs().rows().artifact(id).orElseThrow().lastFetchedAt();
  }

  @Test
  void theDrainTimeoutEndsItWhenNobodyFetches() throws Exception {
    ServerConfig config = ServerConfig.defaults().withDrainTimeout(Duration.ofMillis(1500));
    try (Harness h = new Harness(tmp.resolve("b"), config, AWAITING)) {
      String id = h.createVideo(RetentionTest.video(1));
      h.awaitTerminal(id);
      long t0 = System.nanoTime();
      h.server.drain();
      long took = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(took >= 1400 && took < 10_000, "drain took " + took + " ms for a 1.5 s timeout");
      assertEquals(200, h.get("/v1/videos/" + id + "/content").status(), "still served after");
    }
  }
}
