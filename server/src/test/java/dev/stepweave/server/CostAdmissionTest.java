package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.runtime.CostLimits;
import dev.stepweave.core.runtime.EngineConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Whole-request prices at the HTTP API: the pattern model predicts a denoise step at a millisecond
 * per 1024 pixels of all frames (256×256×9: 576 ms; its default 32×32×5: 5 ms), and its "heavy"
 * prompts take that long per step. The limits here are 0.2 s a step and 60 s a request.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CostAdmissionTest {
  @TempDir Path tmp;

  private Harness server(boolean jumbo) throws Exception {
    return new Harness(
        tmp.resolve("artifacts"),
        new PatternModel(),
        EngineConfig.builder().costLimits(new CostLimits(0.2, 60, jumbo)).build());
  }

  private static Map<String, Object> jumboBody(String prompt, int steps) {
    return Map.of(
        "prompt", prompt, "size", "256x256", "num_frames", 9, "num_inference_steps", steps);
  }

  @Test
  void aRequestOverTheStepLimitGetsA400NamingItsPredictedFigures() throws Exception {
    try (Harness h = server(false)) {
      Harness.Reply r = h.postJson("/v1/videos", jumboBody("too big", 3));
      assertEquals(400, r.status(), r::text);
      JsonNode error = r.json().get("error");
      assertEquals("invalid_request_error", error.get("type").asText());
      assertEquals("exceeds_cost_limit", error.get("code").asText());
      String message = error.get("message").asText();
      assertTrue(
          message.endsWith(
              " is predicted to cost more than this deployment allows: largest step 0.576 s"
                  + " (loop denoise), 1.79 s in all; the limits are 0.2 s a step and 60 s a"
                  + " request"),
          message);
      // Nothing queued; a small request goes through and says what it was priced at.
      JsonNode small = h.postJson("/v1/videos", Map.of("prompt", "small")).json();
      assertEquals("latency", small.at("/cost/class").asText(), small::toString);
      assertEquals(0.005, small.at("/cost/largest_step_seconds").asDouble(), 1e-9);
      assertEquals("completed", h.awaitTerminal(small.get("id").asText()).get("status").asText());
    }
  }

  @Test
  void withTheJumboClassSmallJobsKeepFlowingPastAJumboJob() throws Exception {
    try (Harness h = server(true)) {
      JsonNode jumbo = h.postJson("/v1/videos", jumboBody("a heavy jumbo", 4)).json();
      String jumboId = jumbo.get("id").asText();
      assertEquals("jumbo", jumbo.at("/cost/class").asText(), jumbo::toString);
      h.awaitProgress(jumboId); // one 576 ms step done: the jumbo runs

      long t0 = System.nanoTime();
      List<String> small = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        small.add(h.createVideo(Map.of("prompt", "small " + i)));
      }
      for (String id : small) {
        assertEquals("completed", h.awaitTerminal(id).get("status").asText());
      }
      double smallSeconds = (System.nanoTime() - t0) / 1e9;
      // The small jobs waited for at most the jumbo step in flight when they came, never for the
      // jumbo's remaining steps (3 × 576 ms): it sat out while they ran.
      JsonNode meanwhile = h.get("/v1/videos/" + jumboId).json();
      assertFalse(
          "completed".equals(meanwhile.get("status").asText()),
          "the jumbo finished before six 3-step jobs of 5 ms steps (" + smallSeconds + " s)");
      assertEquals("completed", h.awaitTerminal(jumboId).get("status").asText());
    }
  }

  @Test
  void aDeleteDuringAnIndivisibleStepSaysCancelRequestedAndItsBound() throws Exception {
    try (Harness h = server(true)) {
      PatternModel.StepGate gate = PatternModel.gate("a gated heavy jumbo");
      String id = h.createVideo(jumboBody("a gated heavy jumbo", 4));
      Harness.Reply deleted;
      try {
        assertTrue(gate.entered().tryAcquire(20, TimeUnit.SECONDS), "its step never started");
        deleted = h.delete("/v1/videos/" + id);
      } finally {
        gate.open().countDown(); // the step ends; the cancellation lands at that boundary
      }
      assertEquals(200, deleted.status(), deleted::text);
      JsonNode d = deleted.json();
      assertEquals("video.deleted", d.get("object").asText());
      assertTrue(d.get("deleted").asBoolean());
      assertEquals("cancel_requested", d.get("status").asText(), d::toString);
      assertEquals("denoise", d.at("/step_in_flight/loop").asText());
      assertEquals(1, d.at("/step_in_flight/step").asInt());
      assertEquals(0.576, d.at("/step_in_flight/predicted_seconds").asDouble(), 1e-9);
      double bound = d.get("cancel_within_seconds").asDouble();
      assertTrue(bound >= 0 && bound <= 0.576, d::toString);
      h.awaitMetric("stepweave_requests_cancelled_total 1.0");
      assertEquals(404, h.get("/v1/videos/" + id).status());
      // A finished job is simply deleted.
      String done = h.createVideo(Map.of("prompt", "small later"));
      h.awaitTerminal(done);
      JsonNode gone = h.delete("/v1/videos/" + done).json();
      assertEquals("deleted", gone.get("status").asText());
      assertFalse(gone.has("step_in_flight"));
    }
  }
}
