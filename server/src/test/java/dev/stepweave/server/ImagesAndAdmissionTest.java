package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.request.DiffusionParams;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class ImagesAndAdmissionTest {
  @TempDir Path tmp;

  @Test
  void nImagesAreNOneFrameRequestsWithConsecutiveSeeds() throws Exception {
    try (Harness h = new Harness(tmp.resolve("artifacts"))) {
      Harness.Reply r =
          h.postJson(
              "/v1/images/generations",
              Map.of(
                  "prompt",
                  "a lighthouse",
                  "n",
                  2,
                  "size",
                  "48x32",
                  "seed",
                  100,
                  "num_inference_steps",
                  2,
                  "response_format",
                  "b64_json"));
      assertEquals(200, r.status(), r::text);
      JsonNode data = r.json().get("data");
      assertEquals(2, data.size());
      for (int i = 0; i < 2; i++) {
        byte[] png = Base64.getDecoder().decode(data.get(i).get("b64_json").asText());
        BufferedImage img = ImageIO.read(new ByteArrayInputStream(png));
        assertEquals(48, img.getWidth());
        assertEquals(32, img.getHeight());
        DiffusionParams p =
            new DiffusionParams(
                2, 1.0, 100 + i, 48, 32, 1, 8, "", Optional.empty(), Optional.empty());
        assertArrayEquals(Harness.serialImage(tmp, "a lighthouse", p), png, "image " + i);
      }
      try (var left = Files.list(h.server.artifactDir())) {
        assertEquals(
            0,
            left.filter(f -> !Harness.isStoreFile(f)).count(),
            "image files are removed once answered");
      }
    }
  }

  @Test
  void aFullQueueAnswers429() throws Exception {
    try (Harness h =
        new Harness(tmp.resolve("artifacts"), ServerConfig.defaults().withMaxPendingJobs(1))) {
      String first = h.createVideo(Map.of("prompt", "slow one", "num_inference_steps", 100));
      Harness.Reply refused = h.postJson("/v1/videos", Map.of("prompt", "second"));
      BadInputTest.assertError(refused, 429, null);
      assertEquals("queue_full", refused.json().at("/error/code").asText());
      assertEquals(200, h.delete("/v1/videos/" + first).status());
      h.awaitMetric("stepweave_pending_jobs 0.0"); // the deleted job has stopped, its slot free
      assertEquals(200, h.postJson("/v1/videos", Map.of("prompt", "now")).status());
      assertTrue(
          h.get("/metrics")
              .text()
              .contains("stepweave_http_refused_total{reason=\"queue_full\"} 1.0"));
    }
  }

  @Test
  void drainStopsAdmittingAndFinishesRunningWork() throws Exception {
    try (Harness h = new Harness(tmp.resolve("artifacts"))) {
      String running = h.createVideo(Map.of("prompt", "slow drain", "num_inference_steps", 60));
      String queued = h.createVideo(Map.of("prompt", "queued behind", "num_inference_steps", 2));
      CompletableFuture<Boolean> drained = CompletableFuture.supplyAsync(h.server::drain);
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (h.get("/ready").status() != 503 && System.nanoTime() < deadline) {
        Harness.sleep(5);
      }
      assertEquals("not_accepting", h.get("/ready").json().get("status").asText());
      Harness.Reply refused = h.postJson("/v1/videos", Map.of("prompt", "late"));
      BadInputTest.assertError(refused, 503, null);
      assertTrue(drained.get(), "every job finished on its own");
      assertEquals("completed", h.awaitTerminal(running).get("status").asText());
      assertEquals("completed", h.awaitTerminal(queued).get("status").asText());
      assertEquals(200, h.get("/health").status(), "alive while drained");
    }
  }
}
