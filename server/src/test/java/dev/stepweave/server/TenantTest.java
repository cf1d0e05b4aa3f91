package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** API keys: every call names its key, and a key sees only the jobs it made. */
@Timeout(90)
class TenantTest {
  static final String ALICE = "alice-key-0123456789abcdef";
  static final String BOB = "bob-key-0123456789abcdef";
  static final String ADMIN = "admin-key-0123456789abcdef";

  @TempDir Path tmp;

  private Path keyFile(String... extraLines) throws IOException {
    Path file = tmp.resolve("keys.txt");
    List<String> lines =
        new java.util.ArrayList<>(
            List.of("# the team's keys", ALICE + " alice", "", BOB + "\tbob", ADMIN + " admin"));
    lines.addAll(List.of(extraLines));
    Files.write(file, lines);
    return file;
  }

  private Harness harness(HttpConfig.Builder http) throws IOException {
    return new Harness(tmp.resolve("artifacts"), http.apiKeyFile(keyFile()).build());
  }

  private static Harness.Reply as(Harness h, String key, HttpRequest.Builder b) {
    return h.send(b.header("Authorization", "Bearer " + key));
  }

  private static Harness.Reply get(Harness h, String key, String path) {
    return as(h, key, HttpRequest.newBuilder(h.uri(path)).GET());
  }

  private static Harness.Reply create(Harness h, String key, String prompt) {
    int steps = prompt.contains("slow") ? 100 : 2;
    return as(
        h,
        key,
        HttpRequest.newBuilder(h.uri("/v1/videos"))
            .header("Content-Type", "application/json")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"prompt\":\""
                        + prompt
                        + "\",\"size\":\"16x16\",\"num_frames\":1,\"num_inference_steps\":"
                        + steps
                        + "}")));
  }

  private static void assertError(Harness.Reply r, int status, String code) {
    assertEquals(status, r.status(), r::text);
    assertEquals(code, r.json().get("error").get("code").asText(), r::text);
  }

  private static String awaitTerminal(Harness h, String key, String id) {
    for (int i = 0; i < 6000; i++) {
      Harness.Reply r = get(h, key, "/v1/videos/" + id);
      assertEquals(200, r.status(), r::text);
      String s = r.json().get("status").asText();
      if (Harness.TERMINAL.contains(s)) {
        return s;
      }
      Harness.sleep(10);
    }
    throw new AssertionError(id + " did not finish");
  }

  @Test
  void everyCallButTheProbesNeedsAKey() throws Exception {
    try (Harness h = harness(new HttpConfig.Builder())) {
      Harness.Reply none = h.get("/v1/models");
      assertError(none, 401, "missing_api_key");
      assertEquals("Bearer", none.header("WWW-Authenticate"));
      assertEquals(
          "no API key: send it as 'Authorization: Bearer KEY' (what OpenAI's clients send)",
          none.json().get("error").get("message").asText());
      assertError(get(h, "not-a-key-0123456789", "/v1/videos"), 401, "invalid_api_key");
      assertError(
          h.send(HttpRequest.newBuilder(h.uri("/v1/videos")).header("Authorization", "Basic eA==")),
          401,
          "invalid_api_key");
      assertError(h.get("/metrics"), 401, "missing_api_key");
      assertEquals(200, h.get("/health").status());
      assertEquals(200, h.get("/ready").status());
      assertEquals(200, get(h, ALICE, "/v1/models").status());
    }
  }

  @Test
  void aKeySeesOnlyItsOwnJobs() throws Exception {
    try (Harness h = harness(new HttpConfig.Builder())) {
      Harness.Reply made = create(h, ALICE, "alice's secret prompt");
      assertEquals(200, made.status(), made::text);
      String id = made.json().get("id").asText();
      assertEquals("completed", awaitTerminal(h, ALICE, id));

      for (String path : List.of("", "/content", "/events")) {
        assertError(get(h, BOB, "/v1/videos/" + id + path), 404, "not_found");
      }
      assertError(
          as(h, BOB, HttpRequest.newBuilder(h.uri("/v1/videos/" + id)).DELETE()), 404, "not_found");
      JsonNode bobs = get(h, BOB, "/v1/videos").json();
      assertEquals(0, bobs.get("data").size(), bobs::toString);
      assertFalse(bobs.toString().contains("secret"));
      assertError(get(h, ADMIN, "/v1/videos/" + id), 404, "not_found"); // admin is a tenant too

      JsonNode alices = get(h, ALICE, "/v1/videos").json();
      assertEquals(id, alices.get("data").get(0).get("id").asText());
      assertEquals(200, get(h, ALICE, "/v1/videos/" + id + "/content").status());
      Harness.Reply deleted =
          as(h, ALICE, HttpRequest.newBuilder(h.uri("/v1/videos/" + id)).DELETE());
      assertEquals(200, deleted.status(), deleted::text);
      assertTrue(deleted.json().get("deleted").asBoolean());
    }
  }

  @Test
  void aKeysJobsStayItsOwnAfterARestart() throws Exception {
    String id;
    byte[] before;
    try (Harness h = harness(new HttpConfig.Builder())) {
      Harness.Reply made = create(h, ALICE, "alice's secret prompt");
      assertEquals(200, made.status(), made::text);
      id = made.json().get("id").asText();
      assertEquals("completed", awaitTerminal(h, ALICE, id));
      before = get(h, ALICE, "/v1/videos/" + id + "/content").body();
    }
    try (Harness h = harness(new HttpConfig.Builder())) {
      // The store's owner column holds the key's digest, the tenant id, never the key.
      String alice =
          java.util.HexFormat.of()
              .formatHex(
                  java.security.MessageDigest.getInstance("SHA-256")
                      .digest(ALICE.getBytes(java.nio.charset.StandardCharsets.UTF_8)))
              .substring(0, 16);
      assertEquals(alice, h.server.jobs().rows().job(id).orElseThrow().owner());
      assertEquals(alice, Job.owner(h.server.jobs().rows().job(id).orElseThrow()));

      for (String path : List.of("", "/content", "/events")) {
        assertError(get(h, BOB, "/v1/videos/" + id + path), 404, "not_found");
      }
      assertError(
          as(h, BOB, HttpRequest.newBuilder(h.uri("/v1/videos/" + id)).DELETE()), 404, "not_found");
      assertEquals(0, get(h, BOB, "/v1/videos").json().get("data").size());

      JsonNode alices = get(h, ALICE, "/v1/videos").json();
      assertEquals(1, alices.get("data").size(), alices::toString);
      assertEquals(id, alices.get("data").get(0).get("id").asText());
      assertEquals("completed", get(h, ALICE, "/v1/videos/" + id).json().get("status").asText());
      Harness.Reply content = get(h, ALICE, "/v1/videos/" + id + "/content");
      assertEquals(200, content.status());
      assertArrayEquals(before, content.body(), "the very file written before the restart");
      Harness.Reply deleted =
          as(h, ALICE, HttpRequest.newBuilder(h.uri("/v1/videos/" + id)).DELETE());
      assertEquals(200, deleted.status(), deleted::text);
      assertError(get(h, ALICE, "/v1/videos/" + id), 404, "not_found");
    }
  }

  @Test
  void onlyTheAdminKeySeesTenantMetricsAndMayRescanOrDrain() throws Exception {
    try (Harness h = harness(new HttpConfig.Builder())) {
      create(h, ALICE, "counted");
      String plain = get(h, BOB, "/metrics").text();
      assertTrue(plain.contains("stepweave_requests_admitted_total"), plain);
      assertFalse(plain.contains("stepweave_tenant_"), plain);
      String detail = get(h, ADMIN, "/metrics").text();
      assertTrue(detail.contains("stepweave_tenant_calls_total{tenant=\"alice\"}"), detail);
      assertTrue(detail.contains("stepweave_tenant_calls_total{tenant=\"bob\"}"), detail);

      java.util.function.Supplier<HttpRequest.Builder> rescan =
          () ->
              HttpRequest.newBuilder(h.uri("/v1/loras/rescan"))
                  .POST(HttpRequest.BodyPublishers.noBody());
      assertError(as(h, BOB, rescan.get()), 403, "admin_only");
      assertError(
          as(h, ADMIN, rescan.get().header("Authorization", "Bearer " + BOB)),
          401,
          "invalid_api_key"); // two keys in one call are none
      Harness.Reply rescanned = as(h, ADMIN, rescan.get());
      assertEquals(200, rescanned.status(), rescanned::text);
      java.util.function.Supplier<HttpRequest.Builder> drain =
          () ->
              HttpRequest.newBuilder(h.uri("/admin/drain"))
                  .POST(HttpRequest.BodyPublishers.noBody());
      assertError(as(h, ALICE, drain.get()), 403, "admin_only");
      assertEquals(200, h.get("/ready").status());
      assertEquals(202, as(h, ADMIN, drain.get()).status());
      for (int i = 0; i < 500 && h.get("/ready").status() != 503; i++) {
        Harness.sleep(10);
      }
      assertEquals(503, h.get("/ready").status());
      assertError(create(h, ALICE, "too late"), 503, "not_accepting");
    }
  }

  @Test
  void aKeyOverItsRateIsToldWhenToRetry() throws Exception {
    try (Harness h = harness(new HttpConfig.Builder().keyRate(0.5, 3))) {
      for (int i = 0; i < 3; i++) {
        assertEquals(200, get(h, ALICE, "/v1/models").status());
      }
      Harness.Reply limited = get(h, ALICE, "/v1/models");
      assertError(limited, 429, "rate_limit_exceeded");
      assertEquals("requests", limited.json().get("error").get("type").asText());
      long retry = Long.parseLong(limited.header("Retry-After"));
      assertTrue(retry >= 1 && retry <= 2, "Retry-After " + retry);
      assertEquals(200, get(h, BOB, "/v1/models").status(), "another key has its own bucket");
      assertEquals(200, h.get("/health").status(), "probes are never limited");
    }
  }

  @Test
  void aKeyHasCapsOnQueuedJobsAndOpenStreams() throws Exception {
    // A generous request rate: the poll for the second stream below must meet the stream cap, not
    // the rate limit, however long the first stream takes to open on a loaded machine.
    try (Harness h = harness(new HttpConfig.Builder().keyLimits(1, 1).keyRate(1000, 1000))) {
      Harness.Reply slow = create(h, ALICE, "slow one");
      assertEquals(200, slow.status(), slow::text);
      String id = slow.json().get("id").asText();
      Harness.Reply second = create(h, ALICE, "second");
      assertError(second, 429, "tenant_queue_full");
      assertEquals(
          "this key already has 1 jobs queued or running; retry later",
          second.json().get("error").get("message").asText());
      assertEquals("5", second.header("Retry-After"));
      Harness.Reply bobs = create(h, BOB, "bob is not capped by alice");
      assertEquals(200, bobs.status(), bobs::text);

      // The first stream is open (and counted) once its headers arrive; only then is the second
      // asked for, so the second meets the cap whatever the scheduling of the two requests.
      HttpResponse<java.io.InputStream> stream =
          h.client.send(
              HttpRequest.newBuilder(h.uri("/v1/videos/" + id + "/events"))
                  .header("Authorization", "Bearer " + ALICE)
                  .build(),
              HttpResponse.BodyHandlers.ofInputStream());
      assertEquals(200, stream.statusCode());
      assertError(get(h, ALICE, "/v1/videos/" + id + "/events"), 429, "too_many_streams");
      try (java.io.InputStream body = stream.body()) {
        body.readAllBytes(); // the stream ends with the job
      }
      assertEquals("completed", awaitTerminal(h, ALICE, id));
      assertEquals(200, create(h, ALICE, "a slot is free again").status());
    }
  }

  /** Several keys at once, each creating and deleting: every key ends up seeing exactly its own. */
  @Test
  void boundedLoadWithSeveralKeys() throws Exception {
    List<String> keys = List.of(ALICE, BOB, ADMIN);
    int perKey = 6;
    try (Harness h = harness(new HttpConfig.Builder().keyLimits(perKey, 2).keyRate(1000, 1000))) {
      Map<String, List<String>> made = new java.util.concurrent.ConcurrentHashMap<>();
      List<CompletableFuture<Void>> clients = new java.util.ArrayList<>();
      for (String key : keys) {
        clients.add(
            CompletableFuture.runAsync(
                () -> {
                  List<String> ids = new java.util.ArrayList<>();
                  for (int i = 0; i < perKey; i++) {
                    Harness.Reply r = create(h, key, (i % 3 == 0 ? "slow " : "") + key + i);
                    assertEquals(200, r.status(), r::text);
                    ids.add(r.json().get("id").asText());
                  }
                  Harness.Reply cancel =
                      as(
                          h,
                          key,
                          HttpRequest.newBuilder(h.uri("/v1/videos/" + ids.get(0))).DELETE());
                  assertEquals(200, cancel.status(), cancel::text);
                  assertEquals("video.deleted", cancel.json().get("object").asText());
                  // Deleted, so gone at once: the key sees the other five.
                  made.put(key, ids.subList(1, ids.size()));
                }));
      }
      CompletableFuture.allOf(clients.toArray(CompletableFuture[]::new)).get();
      for (String key : keys) {
        for (String id : made.get(key)) {
          awaitTerminal(h, key, id);
        }
        JsonNode listed = get(h, key, "/v1/videos?limit=100").json().get("data");
        java.util.Set<String> seen = new java.util.HashSet<>();
        listed.forEach(v -> seen.add(v.get("id").asText()));
        assertEquals(java.util.Set.copyOf(made.get(key)), seen, key);
        listed.forEach(v -> assertTrue(v.get("prompt").asText().contains(key), v::toString));
      }
      String detail = get(h, ADMIN, "/metrics").text();
      for (String label : List.of("alice", "bob", "admin")) {
        assertTrue(
            detail.contains("stepweave_tenant_pending_jobs{tenant=\"" + label + "\"} 0.0"), detail);
      }
      assertTrue(detail.contains("stepweave_pending_jobs 0.0"), detail);
    }
  }

  @Test
  void sighupReloadsTheKeyFile() throws Exception {
    String carol = "carol-key-0123456789abcdef";
    try (Harness h = harness(new HttpConfig.Builder())) {
      assertError(get(h, carol, "/v1/models"), 401, "invalid_api_key");
      keyFile(carol + " carol");
      assertTrue(h.server.keysReloadOnSignal(), "this JVM lets a program handle SIGHUP");
      Process kill =
          new ProcessBuilder("kill", "-HUP", Long.toString(ProcessHandle.current().pid()))
              .inheritIO()
              .start();
      assertEquals(0, kill.waitFor());
      Harness.Reply r = null;
      for (int i = 0; i < 500; i++) {
        r = get(h, carol, "/v1/models");
        if (r.status() == 200) {
          break;
        }
        Harness.sleep(10);
      }
      assertEquals(200, r.status(), r::text);
      // A broken file keeps the keys in force.
      Files.writeString(tmp.resolve("keys.txt"), "short\n");
      new ProcessBuilder("kill", "-HUP", Long.toString(ProcessHandle.current().pid()))
          .start()
          .waitFor();
      Harness.sleep(300);
      assertEquals(200, get(h, carol, "/v1/models").status());
    }
  }

  @Test
  void withoutKeysOnlyLoopbackIsServedUnlessInsecureBindIsGiven() throws Exception {
    try (Engine engine = new Engine(new PatternModel(), EngineConfig.defaults(), Extensions.NONE)) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> StepweaveServer.start("0.0.0.0", 0, engine, ServerConfig.defaults()));
      assertTrue(
          e.getMessage().startsWith("--host 0.0.0.0 is not a loopback address"), e::getMessage);
      try (StepweaveServer open =
          StepweaveServer.start(
              "0.0.0.0",
              0,
              engine,
              ServerConfig.defaults(),
              new HttpConfig.Builder().insecureBind(true).build())) {
        assertTrue(open.address().getPort() > 0);
      }
    }
  }

  @Test
  void badKeyFilesStopTheStartNamingTheLine() throws Exception {
    Path file = tmp.resolve("bad.txt");
    Files.write(file, List.of("# ok", "tooshort label"));
    try (Engine engine = new Engine(new PatternModel(), EngineConfig.defaults(), Extensions.NONE)) {
      HttpConfig http = new HttpConfig.Builder().apiKeyFile(file).build();
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> StepweaveServer.start("127.0.0.1", 0, engine, ServerConfig.defaults(), http));
      assertEquals(file + ":2: a key must have at least 16 characters", e.getMessage());
      Files.write(file, List.of(ALICE + " a", ALICE + " b"));
      e =
          assertThrows(
              IllegalArgumentException.class,
              () -> StepweaveServer.start("127.0.0.1", 0, engine, ServerConfig.defaults(), http));
      assertEquals(file + ":2: this key is already on an earlier line", e.getMessage());
      Files.write(file, List.of("# nothing"));
      e =
          assertThrows(
              IllegalArgumentException.class,
              () -> StepweaveServer.start("127.0.0.1", 0, engine, ServerConfig.defaults(), http));
      assertEquals(file + ": no API keys in the file", e.getMessage());
    }
  }

  @Test
  void hostAndOriginAreChecked() throws Exception {
    try (Harness h =
        harness(new HttpConfig.Builder().corsOrigins(List.of("https://app.example")))) {
      String auth = "Authorization: Bearer " + ALICE;
      int port = h.server.baseUri().getPort();
      RawHttp.Answer rebound = RawHttp.get(h.server.baseUri(), "/v1/models", "evil.example", auth);
      assertEquals(403, rebound.status(), rebound.body());
      assertTrue(rebound.body().contains("\"code\":\"host_not_allowed\""), rebound.body());
      assertEquals(
          200, RawHttp.get(h.server.baseUri(), "/v1/models", "localhost:" + port, auth).status());
      assertEquals(
          200, RawHttp.get(h.server.baseUri(), "/health", "evil.example").status(), "probes pass");

      RawHttp.Answer crossSite =
          RawHttp.exchange(
              h.server.baseUri(),
              "POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1:"
                  + port
                  + "\r\nOrigin: http://evil.example\r\nContent-Type:"
                  + " application/x-www-form-urlencoded\r\nContent-Length: 8\r\n"
                  + "Connection: close\r\n\r\nprompt=x");
      assertEquals(403, crossSite.status(), crossSite.body());
      assertTrue(crossSite.body().contains("\"code\":\"origin_not_allowed\""), crossSite.body());

      RawHttp.Answer sameOrigin =
          RawHttp.get(
              h.server.baseUri(),
              "/v1/models",
              "127.0.0.1:" + port,
              auth,
              "Origin: http://127.0.0.1:" + port);
      assertEquals(200, sameOrigin.status(), sameOrigin.body());

      RawHttp.Answer allowed =
          RawHttp.get(
              h.server.baseUri(), "/v1/models", "127.0.0.1", auth, "Origin: https://app.example");
      assertEquals(200, allowed.status(), allowed.body());
      assertEquals("https://app.example", allowed.headers().get("access-control-allow-origin"));

      RawHttp.Answer preflight =
          RawHttp.exchange(
              h.server.baseUri(),
              "OPTIONS /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\n"
                  + "Access-Control-Request-Method: POST\r\n"
                  + "Access-Control-Request-Headers: authorization, content-type\r\n"
                  + "Connection: close\r\n\r\n");
      assertEquals(204, preflight.status(), preflight.body());
      assertEquals("https://app.example", preflight.headers().get("access-control-allow-origin"));
      assertTrue(preflight.headers().get("access-control-allow-headers").contains("Authorization"));
    }
  }
}
