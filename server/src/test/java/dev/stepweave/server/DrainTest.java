package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A drain that awaits downloads: the listener stays up, new work gets 503 and reads 200, until
 * every finished video was fetched once or the drain timeout passed.
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
