package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.EngineStats;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Mp4Writer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code stepweave serve --enable-cache …} with the tiny golden checkpoint: a cached request
 * through HTTP equals the same request submitted to the engine with the same cache settings,
 * threshold 0 equals uncached, two cached requests served at once (interleaved and batched by the
 * scheduler) each equal the request alone, and refusals are 400s naming the field.
 */
@Timeout(300)
class ServeCachesTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String PROMPT = "a red ball bouncing";

  @TempDir Path tmp;
  final HttpClient http = HttpClient.newHttpClient();

  private ServeCommand.Serving serve(String... caches) throws Exception {
    ServeCommand cmd = new ServeCommand();
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "--model",
                ServeCommandTest.TINY.toString(),
                "--port",
                "0",
                "--artifacts",
                tmp.resolve("artifacts").toString()));
    args.addAll(List.of(caches));
    new CommandLine(cmd).parseArgs(args.toArray(String[]::new));
    return cmd.start(
        new PrintWriter(new StringWriter(), true), new PrintWriter(new StringWriter(), true));
  }

  @Test
  void cachedRequestsThroughHttpEqualTheEngineWithTheSameCacheSettings() throws Exception {
    try (ServeCommand.Serving serving =
        serve(
            "--enable-cache",
            "dbcache,fbcache",
            "--enable-cache",
            "stepcache",
            "--cache-default",
            "dbcache.warmup_steps=1")) {
      String base = serving.server().baseUri().toString();

      // DBCache F1B0 at a threshold the tiny model reuses at; warm-up from the deploy default.
      Map<String, Map<String, String>> dbcache =
          Map.of("dbcache", Map.of("fn", "1", "bn", "0", "threshold", "5"));
      JsonNode cached =
          await(
              base,
              create(
                  base,
                  "{\"prompt\":\""
                      + PROMPT
                      + "\",\"size\":\"32x32\",\"num_frames\":5,\"num_inference_steps\":6,"
                      + "\"seed\":3,\"fps\":8,\"guidance_scale\":3,"
                      + "\"cache\":{\"dbcache\":{\"fn\":1,\"bn\":0,\"threshold\":5}}}"));
      assertEquals(1, cached.at("/cache/dbcache/warmup_steps").asLong(), cached::toString);
      GenerationResult alone = alone(serving, 3, 6, dbcache);
      long skipped = alone.report().get("dbcache.skipped_blocks");
      assertTrue(skipped > 0, "the cache reused nothing: " + alone.report());
      assertEquals(
          skipped, cached.at("/cache_report/dbcache.skipped_blocks").asLong(), cached::toString);
      assertEquals(
          alone.report().get("dbcache.cached_steps"),
          cached.at("/cache_report/dbcache.cached_steps").asLong());
      float[] served = content(base, cached);
      assertArrayEquals(decoded(alone), served);
      assertFalse(Arrays.equals(decoded(alone(serving, 3, 6, Map.of())), served), "cache inert");

      // Threshold 0 (step cache, through a form): the uncached output.
      String form =
          "prompt=a+red+ball+bouncing&size=32x32&num_frames=5&num_inference_steps=6&seed=4"
              + "&fps=8&guidance_scale=3&cache=stepcache&cache.stepcache.threshold=0";
      JsonNode zero = await(base, create(base, "application/x-www-form-urlencoded", form));
      assertEquals(0, zero.at("/cache_report/stepcache.cached_steps").asLong(), zero::toString);
      assertArrayEquals(decoded(alone(serving, 4, 6, Map.of())), content(base, zero));

      String metrics = text(base + "/metrics");
      assertTrue(
          metrics.contains(
              "stepweave_cache_total{counter=\"skipped_blocks\",plugin=\"dbcache\"} "
                  + (double) (2 * skipped)),
          metrics); // the HTTP request and the engine one
    }
  }

  @Test
  void twoCachedRequestsServedTogetherEachEqualTheRequestAlone() throws Exception {
    try (ServeCommand.Serving serving = serve("--enable-cache", "fbcache")) {
      String base = serving.server().baseUri().toString();
      // 24 steps each: the two posts arrive microseconds apart, so their denoise loops overlap
      // for many ticks even on a slow, loaded machine.
      List<CompletableFuture<String>> ids =
          List.of(5L, 6L).stream()
              .map(
                  seed ->
                      CompletableFuture.supplyAsync(
                          () ->
                              create(
                                  base,
                                  "{\"prompt\":\""
                                      + PROMPT
                                      + "\",\"size\":\"32x32\",\"num_frames\":5,"
                                      + "\"num_inference_steps\":24,\"seed\":"
                                      + seed
                                      + ",\"fps\":8,\"guidance_scale\":3,"
                                      + "\"cache\":{\"fbcache\":{\"threshold\":5,"
                                      + "\"max_consecutive_cached_steps\":2}}}")))
              .toList();
      JsonNode a = await(base, ids.get(0).join());
      JsonNode b = await(base, ids.get(1).join());
      EngineStats stats = serving.engine().stats();
      long batched = stats.batchSizes().count() - stats.batchSizes().cumulativeCounts()[0];
      assertTrue(batched > 0, "no step was batched");
      Map<String, Map<String, String>> fb =
          Map.of("fbcache", Map.of("threshold", "5", "max_consecutive_cached_steps", "2"));
      for (var pair : List.of(Map.entry(5L, a), Map.entry(6L, b))) {
        GenerationResult alone = alone(serving, pair.getKey(), 24, fb);
        assertTrue(alone.report().get("fbcache.skipped_blocks") > 0, alone.report()::toString);
        assertEquals(
            alone.report().get("fbcache.skipped_blocks"),
            pair.getValue().at("/cache_report/fbcache.skipped_blocks").asLong());
        assertArrayEquals(decoded(alone), content(base, pair.getValue()), "seed " + pair.getKey());
      }
    }
  }

  @Test
  void refusalsAre400sNamingTheField() throws Exception {
    try (ServeCommand.Serving serving = serve("--enable-cache", "dbcache")) {
      String base = serving.server().baseUri().toString();
      String head = "{\"prompt\":\"p\",\"size\":\"32x32\",\"num_frames\":5,";
      assertError(base, head + "\"cache\":{\"stepcache\":{}}}", "cache", "not enabled");
      assertError(
          base,
          head + "\"cache\":{\"dbcache\":{\"threshold\":-1}}}",
          "cache.dbcache.threshold",
          "must be in");
      assertError(
          base,
          head + "\"cache\":{\"dbcache\":{\"Fn\":2}}}",
          "cache.dbcache.Fn",
          "unknown parameter");
      assertError(
          base, head + "\"cache\":\"dbcache\",\"exact\":true}", "exact", "exact request refuses");
    }
    // Deployment mistakes stop serve before it binds.
    var unknown =
        assertThrows(IllegalArgumentException.class, () -> serve("--enable-cache", "teacache"));
    assertTrue(unknown.getMessage().contains("unknown cache 'teacache'"), unknown.getMessage());
    var notEnabled =
        assertThrows(
            IllegalArgumentException.class,
            () -> serve("--enable-cache", "dbcache", "--cache-default", "fbcache.threshold=0.1"));
    assertTrue(notEnabled.getMessage().contains("not enabled"), notEnabled.getMessage());
    var outOfBounds =
        assertThrows(
            IllegalArgumentException.class,
            () -> serve("--enable-cache", "dbcache", "--cache-default", "dbcache.threshold=99"));
    assertTrue(outOfBounds.getMessage().contains("dbcache.threshold"), outOfBounds.getMessage());
  }

  /** The same settings submitted to the serving engine directly, with {@code plugins}. */
  private GenerationResult alone(
      ServeCommand.Serving serving, long seed, int steps, Map<String, Map<String, String>> plugins)
      throws Exception {
    DiffusionParams p =
        new DiffusionParams(steps, 3.0, seed, 32, 32, 5, 8, "", Optional.empty(), Optional.empty());
    Request r = Request.builder(TaskType.T2V, p).prompt(PROMPT).plugins(plugins).build();
    return serving.engine().submit(r).result().get();
  }

  /** Frames as the server writes and a client decodes them (the MP4 records its time). */
  private float[] decoded(GenerationResult r) throws Exception {
    Artifact.VideoArtifact v = r.artifact(Artifact.VideoArtifact.class);
    Path file = Files.createTempFile(tmp, "alone", ".mp4");
    Mp4Writer.write(file, v.frames(), v.fps());
    return Mp4Reader.read(file).frames().toFloatArray();
  }

  private float[] content(String base, JsonNode job) throws Exception {
    HttpResponse<byte[]> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(base + "/v1/videos/" + job.get("id").asText() + "/content"))
                .build(),
            HttpResponse.BodyHandlers.ofByteArray());
    assertEquals(200, r.statusCode());
    Path file = Files.createTempFile(tmp, "served", ".mp4");
    Files.write(file, r.body());
    return Mp4Reader.read(file).frames().toFloatArray();
  }

  private JsonNode await(String base, String id) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
    JsonNode job = JSON.readTree(text(base + "/v1/videos/" + id));
    while (job.get("status").asText().matches("queued|in_progress")
        && System.nanoTime() < deadline) {
      Thread.sleep(50);
      job = JSON.readTree(text(base + "/v1/videos/" + id));
    }
    assertEquals("completed", job.get("status").asText(), job::toString);
    return job;
  }

  private String create(String base, String json) {
    return create(base, "application/json", json);
  }

  private String create(String base, String contentType, String body) {
    HttpResponse<String> r = post(base, contentType, body);
    assertEquals(200, r.statusCode(), r.body());
    try {
      return JSON.readTree(r.body()).get("id").asText();
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  private void assertError(String base, String json, String param, String message)
      throws Exception {
    HttpResponse<String> r = post(base, "application/json", json);
    assertEquals(400, r.statusCode(), r.body());
    JsonNode e = JSON.readTree(r.body()).get("error");
    assertEquals(param, e.get("param").asText(), r.body());
    assertEquals("invalid_request_error", e.get("type").asText(), r.body());
    assertTrue(e.get("message").asText().contains(message), r.body());
  }

  private HttpResponse<String> post(String base, String contentType, String body) {
    try {
      return http.send(
          HttpRequest.newBuilder(URI.create(base + "/v1/videos"))
              .header("Content-Type", contentType)
              .POST(HttpRequest.BodyPublishers.ofString(body))
              .build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private String text(String uri) throws Exception {
    return http.send(
            HttpRequest.newBuilder(URI.create(uri)).build(), HttpResponse.BodyHandlers.ofString())
        .body();
  }
}
