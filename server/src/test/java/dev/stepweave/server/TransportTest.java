package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.SubmissionPublisher;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the move to Jetty brings: seeking in a video (Range, HEAD), protocol errors in OpenAI's JSON
 * shape, HTTP/2 without TLS (h2c), and the access log.
 */
@Timeout(60)
class TransportTest {
  @TempDir static Path tmp;
  static Harness h;
  static Path accessLog;

  @BeforeAll
  static void start() throws Exception {
    accessLog = tmp.resolve("access.log");
    h =
        new Harness(
            tmp.resolve("artifacts"),
            new HttpConfig.Builder().accessLog(accessLog.toString()).build());
  }

  @AfterAll
  static void stop() {
    h.close();
  }

  private static String completedVideo() {
    String id =
        h.createVideo(Map.of("prompt", "a kite", "size", "32x32", "num_frames", 5, "seed", 3));
    assertEquals("completed", h.awaitTerminal(id).get("status").asText());
    return id;
  }

  @Test
  void rangesAndHeadLetABrowserSeek() throws Exception {
    String path = "/v1/videos/" + completedVideo() + "/content";
    byte[] whole = h.get(path).body();
    assertTrue(whole.length > 200, "an MP4 of some size");

    Harness.Reply head = h.send(HttpRequest.newBuilder(h.uri(path)).HEAD());
    assertEquals(200, head.status());
    assertEquals("video/mp4", head.contentType());
    assertEquals(Integer.toString(whole.length), head.header("Content-Length"));
    assertEquals("bytes", head.header("Accept-Ranges"));
    assertEquals(0, head.body().length);

    Harness.Reply first = h.send(HttpRequest.newBuilder(h.uri(path)).header("Range", "bytes=0-99"));
    assertEquals(206, first.status());
    assertEquals("bytes 0-99/" + whole.length, first.header("Content-Range"));
    assertArrayEquals(Arrays.copyOfRange(whole, 0, 100), first.body());

    Harness.Reply tail = h.send(HttpRequest.newBuilder(h.uri(path)).header("Range", "bytes=-10"));
    assertEquals(206, tail.status());
    assertEquals(
        "bytes " + (whole.length - 10) + "-" + (whole.length - 1) + "/" + whole.length,
        tail.header("Content-Range"));
    assertArrayEquals(Arrays.copyOfRange(whole, whole.length - 10, whole.length), tail.body());

    Harness.Reply two =
        h.send(HttpRequest.newBuilder(h.uri(path)).header("Range", "bytes=0-9,20-29"));
    assertEquals(206, two.status());
    assertTrue(two.contentType().startsWith("multipart/byteranges"), two.contentType());
    assertTrue(two.text().contains("Content-Range: bytes 20-29/" + whole.length), two.text());

    Harness.Reply beyond =
        h.send(HttpRequest.newBuilder(h.uri(path)).header("Range", "bytes=" + whole.length + "-"));
    assertEquals(416, beyond.status(), beyond::text);
    assertEquals("bytes */" + whole.length, beyond.header("Content-Range"));
    assertEquals("range_not_satisfiable", beyond.json().get("error").get("code").asText());
  }

  @Test
  void headOfAnUnfinishedOrUnknownVideoIsItsError() {
    Harness.Reply r =
        h.send(
            HttpRequest.newBuilder(h.uri("/v1/videos/video_" + "0".repeat(32) + "/content"))
                .HEAD());
    assertEquals(404, r.status());
    assertEquals(0, r.body().length);
  }

  /** Each malformed request gets its status and a JSON error body, never HTML or a Java name. */
  @Test
  void protocolErrorsAreJsonInOpenAisShape() throws Exception {
    record Case(String request, int status, String code) {}
    String longPath = "/v1/" + "a".repeat(20_000);
    List<Case> cases =
        List.of(
            new Case("GARBAGE\r\n\r\n", 400, "bad_request"),
            new Case("GET / HTTP/1.1\r\n\r\n", 400, "bad_request"), // no Host
            new Case(
                "GET /health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
                505,
                "http_version_not_supported"),
            new Case(
                "GET " + longPath + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414, "uri_too_long"),
            new Case(
                "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
                    + "b".repeat(20_000)
                    + "\r\n\r\n",
                431,
                "headers_too_large"),
            new Case(
                "GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                404,
                "not_found"),
            new Case(
                "PUT /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
                    + "Connection: close\r\n\r\n",
                405,
                "method_not_allowed"),
            new Case(
                "POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 99999999\r\nConnection: close\r\n\r\n{",
                413,
                "request_too_large"),
            new Case(
                "POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n",
                400,
                null));
    for (Case c : cases) {
      RawHttp.Answer a = RawHttp.exchange(h.server.baseUri(), c.request());
      String line = c.request().lines().findFirst().orElse("");
      String what = line.substring(0, Math.min(40, line.length()));
      assertEquals(c.status(), a.status(), what + ": " + a.body());
      assertTrue(
          a.headers().getOrDefault("content-type", "").startsWith("application/json"),
          what + ": " + a.headers());
      assertFalse(a.body().contains("<"), what + ": " + a.body());
      assertFalse(a.body().contains("Exception"), what + ": " + a.body());
      assertFalse(a.body().contains("java."), what + ": " + a.body());
      JsonNode error = Harness.JSON.readTree(a.body()).get("error");
      assertTrue(error.get("message").asText().length() > 3, what);
      assertTrue(error.has("type") && error.has("param") && error.has("code"), what);
      if (c.code() != null) {
        assertEquals(c.code(), error.get("code").asText(), what);
      }
    }
  }

  @Test
  void http2WithoutTlsServesTheApi() throws Exception {
    HttpClient h2 =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_2)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    HttpResponse<String> models =
        h2.send(
            HttpRequest.newBuilder(h.uri("/v1/models")).GET().build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, models.statusCode());
    assertEquals(HttpClient.Version.HTTP_2, models.version(), "upgraded to h2c");
    assertTrue(models.body().contains("\"object\":\"list\""), models.body());
    HttpResponse<String> created =
        h2.send(
            HttpRequest.newBuilder(h.uri("/v1/videos"))
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"prompt\":\"over h2\",\"size\":\"32x32\",\"num_frames\":5}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, created.statusCode(), created.body());
    assertEquals(HttpClient.Version.HTTP_2, created.version());
    String id = Harness.JSON.readTree(created.body()).get("id").asText();
    HttpResponse<String> events =
        h2.send(
            HttpRequest.newBuilder(h.uri("/v1/videos/" + id + "/events")).GET().build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(HttpClient.Version.HTTP_2, events.version());
    assertTrue(events.body().contains("event: video.completed"), events.body());
  }

  /**
   * A call answered without reading its body — refused (a 405) or one whose route ignores it (a
   * rescan's {@code {}}) — over HTTP/2, while the client is still sending that body: the client
   * gets the answer the call gets when sent at once, not a reset stream (RST_STREAM, which the
   * JDK's client reports as an IOException; seen in CI as flaky DeploymentTest and
   * OpenApiDriftTest).
   */
  @Test
  void anAnswerWaitsForTheSmallBodyAnHttp2ClientIsStillSending() throws Exception {
    HttpClient h2 =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_2)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    // The first call upgrades the connection to h2c; the next ones are HTTP/2 streams.
    assertEquals(
        HttpClient.Version.HTTP_2,
        h2.send(
                HttpRequest.newBuilder(h.uri("/v1/models")).GET().build(),
                HttpResponse.BodyHandlers.discarding())
            .version());
    for (String path : List.of("/v1/deployment", "/v1/loras/rescan")) {
      int atOnce = h.post(path, "application/json", "{}".getBytes(StandardCharsets.UTF_8)).status();
      HttpResponse<String> slow = sentSlowly(h2, path, "{\"prompt\":\"sent slowly\"}");
      assertEquals(HttpClient.Version.HTTP_2, slow.version());
      assertEquals(atOnce, slow.statusCode(), path + ": " + slow.body());
    }
    assertEquals(405, sentSlowly(h2, "/v1/deployment", "{}").statusCode());
  }

  /**
   * POSTs {@code json} in two parts half a second apart: the server has the headers long before.
   */
  private static HttpResponse<String> sentSlowly(HttpClient h2, String path, String json)
      throws Exception {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    try (SubmissionPublisher<ByteBuffer> parts = new SubmissionPublisher<>()) {
      CompletableFuture<HttpResponse<String>> answer =
          h2.sendAsync(
              HttpRequest.newBuilder(h.uri(path))
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.fromPublisher(parts, body.length))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      while (parts.getNumberOfSubscribers() == 0) {
        Harness.sleep(5);
      }
      parts.submit(ByteBuffer.wrap(body, 0, 1));
      Harness.sleep(500);
      parts.submit(ByteBuffer.wrap(body, 1, body.length - 1));
      parts.close();
      return answer.get(20, TimeUnit.SECONDS);
    }
  }

  @Test
  void eventStreamsWorkOnHttp11Too() throws Exception {
    HttpClient h1 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    String id =
        h.createVideo(Map.of("prompt", "over h1", "size", "32x32", "num_frames", 5, "seed", 4));
    HttpResponse<java.util.stream.Stream<String>> events =
        h1.send(
            HttpRequest.newBuilder(h.uri("/v1/videos/" + id + "/events")).GET().build(),
            HttpResponse.BodyHandlers.ofLines());
    assertEquals(HttpClient.Version.HTTP_1_1, events.version());
    assertEquals(
        "text/event-stream; charset=utf-8", events.headers().firstValue("Content-Type").get());
    List<String> lines = events.body().toList();
    assertEquals("id: 0", lines.get(0));
    assertEquals("event: request.queued", lines.get(1));
    assertTrue(lines.contains("event: video.completed"), lines::toString);
  }

  @Test
  void theAccessLogHasOneLinePerCall() throws Exception {
    h.get("/health?probe=access-log");
    h.get("/v1/videos/video_" + "1".repeat(32));
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    List<String> lines = List.of();
    while (System.nanoTime() < deadline) {
      lines = Files.exists(accessLog) ? Files.readAllLines(accessLog) : List.of();
      if (lines.stream().anyMatch(l -> l.contains("video_" + "1".repeat(32)))) {
        break;
      }
      Harness.sleep(20);
    }
    assertTrue(
        lines.stream()
            .anyMatch(l -> l.matches(".*\"GET /health\\?probe=access-log HTTP/[0-9.]+\" 200 .*")),
        String.join("\n", lines));
    assertTrue(
        lines.stream()
            .anyMatch(
                l ->
                    l.startsWith("127.0.0.1 anonymous ")
                        && l.matches(
                            ".*\"GET /v1/videos/video_"
                                + "1".repeat(32)
                                + " HTTP/[0-9.]+\" 404 .*")),
        String.join("\n", lines));
  }
}
