package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.runtime.CostLimits;
import dev.stepweave.core.runtime.EngineConfig;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code GET /v1/deployment}: the engine's deployment card as a router reads it. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeploymentTest {
  @TempDir Path tmp;

  @Test
  void theDeploymentCardNamesTheModelItsLimitsTheCostModelHealthAndLoad() throws Exception {
    try (Harness h =
        new Harness(
            tmp.resolve("artifacts"),
            new PatternModel(),
            EngineConfig.builder().costLimits(new CostLimits(0.2, 60, true)).build())) {
      Harness.Reply r = h.get("/v1/deployment");
      assertEquals(200, r.status(), r::text);
      assertEquals(ApiJson.SCHEMA_VERSION, r.schema());
      JsonNode d = r.json();
      assertEquals("deployment", d.get("object").asText());
      assertEquals(1, d.get("schema_version").asInt());
      assertEquals(StoreConfig.LOCAL, d.get("replica_id").asText());
      JsonNode model = d.at("/models/0");
      assertEquals(PatternModel.ID, model.get("id").asText());
      assertEquals("[\"t2i\",\"t2v\"]", model.get("tasks").toString());
      assertEquals("denoise", model.at("/loops/1/id").asText(), model.toString());
      assertEquals("DIFFUSION_STEP", model.at("/loops/1/kind").asText());
      assertEquals(32, model.at("/defaults/width").asInt());
      assertEquals(1920, model.at("/supported/size/max_width").asInt());
      assertEquals(100, model.at("/supported/num_inference_steps/max").asInt());
      assertEquals("4k+1", model.at("/supported/num_frames/form").asText());
      assertEquals(0.2, d.at("/limits/max_step_seconds").asDouble());
      assertEquals(60, d.at("/limits/max_request_seconds").asDouble());
      assertTrue(d.at("/limits/jumbo_class").asBoolean());
      assertTrue(d.at("/limits/memory_budget_bytes").isNull(), "unlimited on the CPU");
      assertEquals("/ready", d.at("/health/readiness/path").asText());
      assertEquals(503, d.at("/health/readiness/not_ready").asInt());
      assertEquals("static", d.at("/cost_model/calibration_state").asText());
      assertEquals(0, d.at("/load/completed").asInt());
      assertTrue(d.at("/load/accepting").asBoolean());

      String id = h.createVideo(Map.of("prompt", "priced"));
      h.awaitTerminal(id);
      JsonNode after = h.get("/v1/deployment").json();
      assertEquals(1, after.at("/load/completed").asInt());
      // The denoise steps were measured against their static figure: a calibration exists.
      assertEquals("calibrated", after.at("/cost_model/calibration_state").asText());
      JsonNode cal = after.at("/cost_model/calibrations/0");
      assertEquals("DIFFUSION_STEP", cal.get("kind").asText(), after.toString());
      assertEquals(3, cal.get("samples").asInt(), "three denoise steps");
      assertFalse(after.at("/cost_model/entries").isEmpty());

      // The admin connector serves it too (a router or probe with its own connections).
      var admin =
          h.send(HttpRequest.newBuilder(URI.create(h.server.adminUri() + "/v1/deployment")).GET());
      assertEquals(200, admin.status(), admin::text);
      assertEquals(PatternModel.ID, admin.json().at("/models/0/id").asText());
      assertEquals(405, h.postJson("/v1/deployment", Map.of()).status());
    }
  }
}
