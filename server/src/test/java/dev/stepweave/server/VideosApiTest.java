package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class VideosApiTest {
  @TempDir Path tmp;
  Harness h;

  @BeforeEach
  void start() throws Exception {
    h = new Harness(tmp.resolve("artifacts"));
  }

  @AfterEach
  void stop() {
    h.close();
  }

  @Test
  void createPollAndDownloadAVideoThatEqualsASerialRun() throws Exception {
    Harness.Reply created =
        h.postJson(
            "/v1/videos",
            Map.of("prompt", "a red fox", "model", PatternModel.ID, "size", "48x32", "seed", 7));
    assertEquals(200, created.status(), created::text);
    JsonNode v = created.json();
    assertTrue(v.get("id").asText().matches("video_[0-9a-f]{32}"), v::toString);
    assertEquals("video", v.get("object").asText());
    // The reply is the job as it stands: the pattern model's few milliseconds of work may already
    // be done by then (a loaded machine ran it in 9 ms before the reply was written).
    assertTrue(
        List.of("queued", "in_progress", "completed").contains(v.get("status").asText()),
        v::toString);
    assertEquals("48x32", v.get("size").asText());
    assertEquals("0.5", v.get("seconds").asText(), "5 frames at the card's 8 fps");

    JsonNode done = h.awaitTerminal(v.get("id").asText());
    assertEquals("completed", done.get("status").asText(), done::toString);
    assertEquals(100, done.get("progress").asInt());
    assertTrue(done.get("completed_at").asLong() >= done.get("created_at").asLong());
    assertTrue(done.get("error").isNull());
    assertTrue(done.at("/timings/loops_s").has("denoise"), done::toString);

    Harness.Reply content = h.get("/v1/videos/" + v.get("id").asText() + "/content");
    assertEquals(200, content.status());
    assertEquals("video/mp4", content.contentType());
    byte[] alone = Harness.serialVideo(tmp, "a red fox", Harness.paramsOf(done));
    assertArrayEquals(Harness.decoded(tmp, alone), Harness.decoded(tmp, content.body()));
  }

  @Test
  void everyJsonAnswerNamesItsSchemaVersionInAHeaderNotTheBody() {
    Harness.Reply created = h.postJson("/v1/videos", Map.of("prompt", "versioned"));
    assertEquals(200, created.status(), created::text);
    assertEquals(ApiJson.SCHEMA_VERSION, created.schema());
    assertFalse(created.json().has("schema_version"), created::text);
    String id = created.json().get("id").asText();
    h.awaitTerminal(id);
    assertEquals(ApiJson.SCHEMA_VERSION, h.get("/v1/videos/" + id).schema());
    assertEquals(ApiJson.SCHEMA_VERSION, h.get("/v1/videos").schema());
    Harness.Reply missing = h.get("/v1/videos/video_nope");
    assertEquals(404, missing.status());
    assertEquals(ApiJson.SCHEMA_VERSION, missing.schema(), "errors are versioned too");
  }

  @Test
  void multipartFormsAsOpenAiClientsSendThem() {
    String boundary = "----stepweave1234";
    StringBuilder body = new StringBuilder();
    Map<String, String> fields =
        Map.of(
            "prompt", "a café at dusk",
            "seconds", "2",
            "fps", "8",
            "size", "32x48",
            "num_inference_steps", "2",
            "guidance_scale", "1.5",
            "seed", "42");
    fields.forEach(
        (k, val) ->
            body.append("--")
                .append(boundary)
                .append("\r\nContent-Disposition: form-data; name=\"")
                .append(k)
                .append("\"\r\n\r\n")
                .append(val)
                .append("\r\n"));
    body.append("--").append(boundary).append("--\r\n");
    Harness.Reply r =
        h.post(
            "/v1/videos",
            "multipart/form-data; boundary=" + boundary,
            body.toString().getBytes(StandardCharsets.UTF_8));
    assertEquals(200, r.status(), r::text);
    JsonNode v = r.json();
    assertEquals("a café at dusk", v.get("prompt").asText());
    assertEquals("2", v.get("seconds").asText());
    assertEquals(17, v.get("num_frames").asInt(), "2 s at 8 fps is 16 frame steps: 4k+1 = 17");
    assertEquals("32x48", v.get("size").asText());
    assertEquals(2, v.get("num_inference_steps").asInt());
    assertEquals(1.5, v.get("guidance_scale").asDouble());
    assertEquals(42, v.get("seed").asLong());
    assertEquals("completed", h.awaitTerminal(v.get("id").asText()).get("status").asText());
  }

  @Test
  void secondsRoundToTheNearestFourKPlusOneFrames() {
    JsonNode v =
        h.postJson("/v1/videos", Map.of("prompt", "x", "seconds", "1.3", "fps", "10")).json();
    assertEquals(13, v.get("num_frames").asInt(), "13 frame steps round to 12: 4·3+1");
    JsonNode explicit =
        h.postJson("/v1/videos", Map.of("prompt", "x", "num_frames", 9, "fps", 8)).json();
    assertEquals(9, explicit.get("num_frames").asInt());
    assertEquals("1", explicit.get("seconds").asText());
  }

  @Test
  void listsNewestFirstWithPaging() {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ids.add(h.createVideo(Map.of("prompt", "clip " + i, "num_inference_steps", 1)));
    }
    JsonNode page = h.get("/v1/videos?limit=2").json();
    assertEquals("list", page.get("object").asText());
    assertEquals(ids.get(2), page.at("/data/0/id").asText());
    assertEquals(ids.get(1), page.at("/data/1/id").asText());
    assertTrue(page.get("has_more").asBoolean());
    JsonNode rest = h.get("/v1/videos?limit=2&after=" + page.get("last_id").asText()).json();
    assertEquals(ids.get(0), rest.at("/data/0/id").asText());
    assertFalse(rest.get("has_more").asBoolean());
    JsonNode asc = h.get("/v1/videos?order=asc").json();
    assertEquals(ids.get(0), asc.at("/data/0/id").asText());
  }

  @Test
  void deleteCancelsARunningJobAndForgetsAFinishedOne() {
    String running = h.createVideo(Map.of("prompt", "slow river", "num_inference_steps", 100));
    h.awaitProgress(running);
    // OpenAI's delete of a running job: the deleted object, the job gone for clients at once and
    // cancelled at its next step boundary (the engine counts it), no file left behind.
    JsonNode gone = h.delete("/v1/videos/" + running).json();
    assertEquals("video.deleted", gone.get("object").asText(), gone::toString);
    assertEquals(running, gone.get("id").asText());
    assertTrue(gone.get("deleted").asBoolean());
    assertEquals(404, h.get("/v1/videos/" + running).status());
    assertEquals(404, h.get("/v1/videos/" + running + "/content").status());
    assertEquals(404, h.delete("/v1/videos/" + running).status());
    h.get("/v1/videos")
        .json()
        .get("data")
        .forEach(v -> assertNotEquals(running, v.get("id").asText()));
    h.awaitMetric("stepweave_requests_cancelled_total 1.0");
    assertFalse(h.server.artifactDir().resolve(running + ".mp4").toFile().exists());

    String finished = h.createVideo(Map.of("prompt", "quick", "num_inference_steps", 1));
    h.awaitTerminal(finished);
    assertTrue(h.server.artifactDir().resolve(finished + ".mp4").toFile().exists());
    JsonNode deleted = h.delete("/v1/videos/" + finished).json();
    assertEquals("video.deleted", deleted.get("object").asText());
    assertTrue(deleted.get("deleted").asBoolean());
    assertEquals(404, h.get("/v1/videos/" + finished).status());
    assertFalse(h.server.artifactDir().resolve(finished + ".mp4").toFile().exists());
  }

  @Test
  void modelsHealthReadyAndMetrics() {
    JsonNode models = h.get("/v1/models").json();
    assertEquals(PatternModel.ID, models.at("/data/0/id").asText());
    assertEquals("model", models.at("/data/0/object").asText());
    assertEquals(200, h.get("/health").status());
    assertEquals("ready", h.get("/ready").json().get("status").asText());

    h.awaitTerminal(h.createVideo(Map.of("prompt", "counted", "num_inference_steps", 1)));
    Harness.Reply metrics = h.get("/metrics");
    assertEquals(200, metrics.status());
    assertTrue(metrics.contentType().startsWith("text/plain; version=0.0.4"));
    String text = metrics.text();
    for (String series :
        List.of(
            "stepweave_queue_depth 0.0",
            "stepweave_running_loops 0.0",
            "stepweave_requests_admitted_total 1.0",
            "stepweave_requests_completed_total 1.0",
            "stepweave_requests_cancelled_total 0.0",
            "stepweave_requests_failed_total 0.0",
            "stepweave_requests_rejected_total 0.0",
            "stepweave_accepting 1.0",
            "# TYPE stepweave_step_seconds histogram",
            "stepweave_batch_size_bucket{le=\"+Inf\"}",
            "stepweave_cost_model_relative_error_count",
            "stepweave_component_switch_seconds_count 0")) {
      assertTrue(text.contains(series), () -> series + " missing from\n" + text);
    }
  }
}
