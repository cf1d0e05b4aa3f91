package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class EventStreamTest {
  @TempDir Path tmp;

  record Sse(String id, String event, JsonNode data) {}

  /** Reads the whole stream: it must end by itself. */
  static List<Sse> read(Harness h, String videoId) throws Exception {
    return events(open(h, videoId));
  }

  /** A video's event stream, open: its headers have arrived. */
  static HttpResponse<java.io.InputStream> open(Harness h, String videoId) throws Exception {
    HttpResponse<java.io.InputStream> r =
        h.client.send(
            HttpRequest.newBuilder(h.uri("/v1/videos/" + videoId + "/events")).GET().build(),
            HttpResponse.BodyHandlers.ofInputStream());
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream"));
    return r;
  }

  /** The events of an open stream, read to its end. */
  static List<Sse> events(HttpResponse<java.io.InputStream> r) throws Exception {
    List<Sse> events = new ArrayList<>();
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      String id = null;
      String event = null;
      String line;
      while ((line = in.readLine()) != null) {
        if (line.startsWith("id: ")) {
          id = line.substring(4);
        } else if (line.startsWith("event: ")) {
          event = line.substring(7);
        } else if (line.startsWith("data: ")) {
          events.add(new Sse(id, event, Harness.JSON.readTree(line.substring(6))));
        }
      }
    }
    return events;
  }

  @Test
  void streamsEveryStepInOrderThenTheFinishedVideoAndEnds() throws Exception {
    try (Harness h = new Harness(tmp.resolve("artifacts"))) {
      String id = h.createVideo(Map.of("prompt", "slow stream", "num_inference_steps", 6));
      List<Sse> events = read(h, id);
      List<String> types = events.stream().map(Sse::event).toList();
      List<String> expected = new ArrayList<>(List.of("request.queued", "request.started"));
      for (int i = 0; i < 6; i++) {
        expected.add("request.step");
      }
      expected.addAll(
          List.of("request.step", "artifact.ready", "request.completed", "video.completed"));
      assertEquals(expected, types);
      for (int i = 0; i < events.size(); i++) {
        assertEquals(Integer.toString(i), events.get(i).id());
      }
      for (int step = 1; step <= 6; step++) {
        JsonNode s = events.get(1 + step).data();
        assertEquals("denoise", s.get("loop").asText());
        assertEquals(step, s.get("step").asInt());
        assertEquals(6, s.get("total_steps").asInt());
        assertEquals(id, s.get("id").asText());
      }
      assertEquals("decode", events.get(8).data().get("loop").asText());
      assertEquals("video", events.get(9).data().get("kind").asText());
      JsonNode last = events.getLast().data();
      assertEquals("completed", last.get("status").asText());
      assertEquals(100, last.get("progress").asInt());

      assertEquals(types, read(h, id).stream().map(Sse::event).toList(), "replayed when late");
    }
  }

  @Test
  void aCancelledJobsStreamEndsWithItsCancellation() throws Exception {
    try (Harness h = new Harness(tmp.resolve("artifacts"))) {
      String id = h.createVideo(Map.of("prompt", "slow cancelled", "num_inference_steps", 100));
      // Opened before the delete (a deleted video is gone for new streams at once), read after.
      HttpResponse<java.io.InputStream> open = open(h, id);
      var stream =
          java.util.concurrent.CompletableFuture.supplyAsync(
              () -> {
                try {
                  return events(open);
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
      h.awaitProgress(id);
      h.delete("/v1/videos/" + id);
      List<Sse> events = stream.get();
      assertEquals("request.cancelled", events.get(events.size() - 2).event());
      assertEquals("video.cancelled", events.getLast().event());
      assertTrue(events.get(events.size() - 2).data().get("steps_done").asInt() < 100);
    }
  }
}
