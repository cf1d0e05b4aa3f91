package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.runtime.EngineConfig;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pool-fatal fault under the HTTP API: while the pool is rebuilt the replica is not ready and
 * refuses new jobs, reads still answer; then the running job resumes from its checkpoint on the new
 * instance and completes with the video an undisturbed run makes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PoolFaultTest {
  @TempDir Path tmp;

  @Test
  void aPoolFaultMakesTheReplicaUnreadyUntilRebuiltThenTheJobCompletesAsIfUndisturbed()
      throws Exception {
    Semaphore rebuilding = new Semaphore(0);
    CountDownLatch rebuilt = new CountDownLatch(1);
    PatternModel[] fresh = new PatternModel[1];
    EngineConfig config =
        EngineConfig.builder()
            .recovery(
                (broken, cause) -> {
                  rebuilding.release();
                  try {
                    rebuilt.await(20, TimeUnit.SECONDS);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  fresh[0] = new PatternModel();
                  return fresh[0];
                })
            .build();
    String prompt = "a fox through a device loss";
    Map<String, Object> body = Map.of("prompt", prompt, "num_inference_steps", 5, "seed", 3);
    try (Harness h = new Harness(tmp.resolve("artifacts"), new PatternModel(), config)) {
      PatternModel.poolFaultOnce(prompt);
      String id = h.createVideo(body);
      try {
        assertTrue(rebuilding.tryAcquire(20, TimeUnit.SECONDS), "the fault never struck");
        assertEquals(503, h.get("/ready").status());
        assertEquals(200, h.get("/health").status());
        assertEquals(200, h.get("/v1/videos/" + id).status(), "reads still answer");
        Harness.Reply refused = h.postJson("/v1/videos", Map.of("prompt", "meanwhile"));
        assertEquals(503, refused.status(), refused::text);
        assertEquals("not_accepting", refused.json().at("/error/code").asText());
      } finally {
        rebuilt.countDown();
      }
      JsonNode done = h.awaitTerminal(id);
      assertEquals("completed", done.get("status").asText(), done::toString);
      assertEquals(200, h.get("/ready").status());
      assertNotSame(h.model, h.engine.model());
      assertEquals(fresh[0], h.engine.model());
      assertEquals(1, h.get("/v1/deployment").json().at("/load/pool_faults").asInt());

      byte[] video = h.get("/v1/videos/" + id + "/content").body();
      byte[] alone = Harness.serialVideo(tmp, prompt, Harness.paramsOf(done));
      org.junit.jupiter.api.Assertions.assertArrayEquals(
          Harness.decoded(tmp, alone), Harness.decoded(tmp, video));
    }
  }
}
