package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cache plugins through the HTTP API: the deployment enables them, a request turns them on and
 * parameterises them (JSON, multipart, urlencoded), the job object and {@code /metrics} report what
 * they did, and every wrong use is a 400 naming its field.
 */
@Timeout(60)
class CacheApiTest {
  static final String CACHE = PatternModel.CACHE.id();

  @TempDir Path tmp;
  Harness h;

  @BeforeEach
  void start() throws Exception {
    h = new Harness(tmp.resolve("artifacts"), ServerConfig.defaults(), Harness.cached());
  }

  @AfterEach
  void stop() {
    h.close();
  }

  @Test
  void aCachedVideoEqualsTheSameRequestOnTheEngineAndReportsWhatTheCacheDid() throws Exception {
    Map<String, Object> body = video(11);
    body.put("cache", Map.of(CACHE, Map.of("threshold", 0.6)));
    Harness.Reply created = h.postJson("/v1/videos", body);
    assertEquals(200, created.status(), created::text);
    JsonNode v = created.json();
    // Every parameter as it runs, the schema's defaults filled in; no report until completed.
    assertEquals(0.6, v.at("/cache/" + CACHE + "/threshold").asDouble(), v::toString);
    assertEquals(1, v.at("/cache/" + CACHE + "/warmup_steps").asLong(), v::toString);
    assertTrue(v.at("/cache/" + CACHE + "/warmup_steps").isIntegralNumber(), v::toString);
    assertFalse(v.get("exact").asBoolean());

    JsonNode done = h.awaitTerminal(v.get("id").asText());
    assertEquals("completed", done.get("status").asText(), done::toString);
    // 6 steps, warm-up 1, every other step reused: steps 1, 3, 5.
    assertEquals(3, done.at("/cache_report/" + CACHE + ".cached_steps").asLong(), done::toString);
    assertEquals(3, done.at("/cache_report/" + CACHE + ".computed_steps").asLong(), done::toString);

    byte[] served = h.get("/v1/videos/" + v.get("id").asText() + "/content").body();
    byte[] alone =
        Harness.serialVideo(
            tmp, "a red fox", Harness.paramsOf(done), Map.of(CACHE, Map.of("threshold", "0.6")));
    assertArrayEquals(Harness.decoded(tmp, alone), Harness.decoded(tmp, served));
    byte[] uncached = Harness.serialVideo(tmp, "a red fox", Harness.paramsOf(done));
    assertFalse(
        java.util.Arrays.equals(Harness.decoded(tmp, uncached), Harness.decoded(tmp, served)),
        "the cache changed nothing: the test would not see a lost parameter");

    String metrics = h.get("/metrics").text();
    assertTrue(
        metrics.contains(
            "stepweave_cache_total{counter=\"cached_steps\",plugin=\"" + CACHE + "\"} 3.0"),
        metrics);
  }

  @Test
  void thresholdZeroThroughAFormEqualsUncached() throws Exception {
    String id =
        createForm(
            "application/x-www-form-urlencoded",
            "prompt=a+red+fox&size=32x32&num_inference_steps=6&seed=12&cache="
                + CACHE
                + "&cache."
                + CACHE
                + ".threshold=0");
    JsonNode done = h.awaitTerminal(id);
    assertEquals(0, done.at("/cache_report/" + CACHE + ".cached_steps").asLong(), done::toString);
    byte[] served = h.get("/v1/videos/" + id + "/content").body();
    byte[] uncached = Harness.serialVideo(tmp, "a red fox", Harness.paramsOf(done));
    assertArrayEquals(Harness.decoded(tmp, uncached), Harness.decoded(tmp, served));
  }

  @Test
  void multipartTurnsTheCacheOnWithTheDeploymentsDefaults() throws Exception {
    String boundary = "----cache42";
    StringBuilder body = new StringBuilder();
    Map.of("prompt", "a red fox", "size", "32x32", "num_inference_steps", "4", "cache", CACHE)
        .forEach(
            (k, val) ->
                body.append("--")
                    .append(boundary)
                    .append("\r\nContent-Disposition: form-data; name=\"")
                    .append(k)
                    .append("\"\r\n\r\n")
                    .append(val)
                    .append("\r\n"));
    body.append("--").append(boundary).append("--\r\n");
    String id = createForm("multipart/form-data; boundary=" + boundary, body.toString());
    JsonNode done = h.awaitTerminal(id);
    assertEquals(0.5, done.at("/cache/" + CACHE + "/threshold").asDouble(), done::toString);
    assertEquals(2, done.at("/cache_report/" + CACHE + ".cached_steps").asLong(), done::toString);
  }

  @Test
  void imagesCarryTheirCacheReport() {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("prompt", "a lighthouse");
    body.put("size", "32x32");
    body.put("num_inference_steps", 5);
    body.put("seed", 3);
    body.put("n", 2);
    body.put("cache", CACHE);
    Harness.Reply r = h.postJson("/v1/images/generations", body);
    assertEquals(200, r.status(), r::text);
    for (JsonNode image : r.json().get("data")) {
      assertEquals(2, image.at("/cache_report/" + CACHE + ".cached_steps").asLong(), r::text);
    }
  }

  @Test
  void theModelListsTheEnabledCachesAndTheirParameters() {
    JsonNode model = h.get("/v1/models").json().at("/data/0");
    JsonNode cache = model.at("/caches/0");
    assertEquals(CACHE, cache.get("id").asText(), model::toString);
    assertTrue(cache.get("distribution_altering").asBoolean());
    assertEquals("number", cache.at("/parameters/threshold/type").asText());
    assertEquals(1.0, cache.at("/parameters/threshold/max").asDouble());
    assertEquals("integer", cache.at("/parameters/warmup_steps/type").asText());
    assertEquals(1, cache.at("/parameters/warmup_steps/default").asLong());
  }

  @Test
  void wrongCacheUseIsA400NamingTheField() {
    assertRefused(Map.of("cache", Map.of("dbcache", Map.of())), "cache", "not enabled");
    assertRefused(
        Map.of("cache", Map.of(CACHE, Map.of("threshold", 5))),
        "cache." + CACHE + ".threshold",
        "must be in 0.0..1.0");
    assertRefused(
        Map.of("cache", Map.of(CACHE, Map.of("fn", 8))),
        "cache." + CACHE + ".fn",
        "unknown parameter");
    assertRefused(
        Map.of("cache", Map.of(CACHE, Map.of("warmup_steps", "two"))),
        "cache." + CACHE + ".warmup_steps",
        "must be an integer");
    assertRefused(Map.of("cache", Map.of(CACHE, 3)), "cache." + CACHE, "object of parameters");
    assertRefused(
        Map.of("cache." + CACHE + ".threshold", 0.2), "cache." + CACHE + ".threshold", "does not");
    assertRefused(Map.of("cache", CACHE + "," + CACHE), "cache", "twice");
    assertRefused(Map.of("cache", "Bad Id"), "cache", "plugin ids");
    assertRefused(Map.of("cache", CACHE, "exact", true), "exact", "exact request refuses");
    assertRefused(Map.of("exact", "maybe"), "exact", "true or false");
    // An exact request without caches is fine.
    Map<String, Object> exact = video(1);
    exact.put("exact", true);
    String id = h.createVideo(exact);
    assertTrue(id.startsWith("video_"), id);
    assertEquals("completed", h.awaitTerminal(id).get("status").asText());
  }

  @Test
  void aServerThatEnablesNoCacheRefusesEveryCache() throws Exception {
    try (Harness plain = new Harness(tmp.resolve("plain"))) {
      Map<String, Object> body = video(1);
      body.put("cache", CACHE);
      Harness.Reply r = plain.postJson("/v1/videos", body);
      BadInputTest.assertError(r, 400, "cache");
      assertTrue(r.text().contains("(enabled: none)"), r::text);
      assertEquals(0, plain.get("/v1/models").json().at("/data/0/caches").size());
    }
  }

  private void assertRefused(Map<String, Object> extra, String param, String message) {
    Map<String, Object> body = video(1);
    body.putAll(extra);
    Harness.Reply r = h.postJson("/v1/videos", body);
    BadInputTest.assertError(r, 400, param);
    assertTrue(r.json().at("/error/message").asText().contains(message), r::text);
  }

  private String createForm(String contentType, String body) {
    Harness.Reply r = h.post("/v1/videos", contentType, body.getBytes(StandardCharsets.UTF_8));
    assertEquals(200, r.status(), r::text);
    return r.json().get("id").asText();
  }

  private static Map<String, Object> video(long seed) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("prompt", "a red fox");
    body.put("size", "32x32");
    body.put("num_inference_steps", 6);
    body.put("seed", seed);
    return body;
  }
}
