package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Mp4Writer;
import dev.stepweave.media.PngWriter;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/** A server on loopback over a {@link PatternModel}, and an HTTP client for it. */
final class Harness implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();
  static final Set<String> TERMINAL = Set.of("completed", "failed", "cancelled");

  /** A deployment that enables the pattern model's cache (a new one each: it counts metrics). */
  static Extensions cached() {
    return Extensions.builder().enable(PatternModel.CACHE).build();
  }

  final PatternModel model;
  final Engine engine;
  final StepweaveServer server;
  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  Harness(
      Path artifacts,
      ServerConfig config,
      HttpConfig http,
      StoreConfig store,
      Extensions extensions,
      PatternModel model)
      throws IOException {
    this(artifacts, config, http, store, extensions, model, EngineConfig.defaults());
  }

  /** A server over a pattern model whose engine runs with {@code engineConfig}. */
  Harness(Path artifacts, PatternModel model, EngineConfig engineConfig) throws IOException {
    this(
        artifacts,
        ServerConfig.defaults(),
        HttpConfig.defaults(),
        StoreConfig.defaults(),
        Extensions.NONE,
        model,
        engineConfig);
  }

  private Harness(
      Path artifacts,
      ServerConfig config,
      HttpConfig http,
      StoreConfig store,
      Extensions extensions,
      PatternModel model,
      EngineConfig engineConfig)
      throws IOException {
    this.model = model;
    engine = new Engine(model, engineConfig, extensions);
    server =
        StepweaveServer.start(
            "127.0.0.1", 0, engine, config.withArtifactDir(artifacts), http, store);
  }

  Harness(
      Path artifacts,
      ServerConfig config,
      HttpConfig http,
      Extensions extensions,
      PatternModel model)
      throws IOException {
    this(artifacts, config, http, StoreConfig.defaults(), extensions, model);
  }

  Harness(
      Path artifacts,
      ServerConfig config,
      StoreConfig store,
      Extensions extensions,
      PatternModel model)
      throws IOException {
    this(artifacts, config, HttpConfig.defaults(), store, extensions, model);
  }

  /** A server with the store settings {@code store}, over a new pattern model. */
  Harness(Path artifacts, ServerConfig config, StoreConfig store) throws IOException {
    this(artifacts, config, store, Extensions.NONE, new PatternModel());
  }

  Harness(Path artifacts, ServerConfig config, Extensions extensions, PatternModel model)
      throws IOException {
    this(artifacts, config, HttpConfig.defaults(), extensions, model);
  }

  Harness(Path artifacts, HttpConfig http) throws IOException {
    this(artifacts, ServerConfig.defaults(), http, Extensions.NONE, new PatternModel());
  }

  Harness(Path artifacts, ServerConfig config, Extensions extensions) throws IOException {
    this(artifacts, config, extensions, new PatternModel());
  }

  Harness(Path artifacts, ServerConfig config) throws IOException {
    this(artifacts, config, Extensions.NONE);
  }

  Harness(Path artifacts) throws IOException {
    this(artifacts, ServerConfig.defaults());
  }

  /**
   * @param schema the {@code Stepweave-Schema} header, or "" when absent
   */
  record Reply(
      int status,
      String contentType,
      String schema,
      byte[] body,
      java.net.http.HttpHeaders headers) {
    /** A response header's first value, or "" when absent. */
    String header(String name) {
      return headers.firstValue(name).orElse("");
    }

    JsonNode json() {
      try {
        return JSON.readTree(body);
      } catch (IOException e) {
        throw new AssertionError("not JSON: " + new String(body), e);
      }
    }

    String text() {
      return new String(body, java.nio.charset.StandardCharsets.UTF_8);
    }
  }

  URI uri(String path) {
    return URI.create(server.baseUri() + path);
  }

  Reply send(HttpRequest.Builder b) {
    try {
      HttpResponse<byte[]> r =
          client.send(
              b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofByteArray());
      return new Reply(
          r.statusCode(),
          r.headers().firstValue("Content-Type").orElse(""),
          r.headers().firstValue(ApiJson.SCHEMA_HEADER).orElse(""),
          r.body(),
          r.headers());
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  Reply get(String path) {
    return send(HttpRequest.newBuilder(uri(path)).GET());
  }

  Reply delete(String path) {
    return send(HttpRequest.newBuilder(uri(path)).DELETE());
  }

  Reply post(String path, String contentType, byte[] body) {
    return send(
        HttpRequest.newBuilder(uri(path))
            .header("Content-Type", contentType)
            .POST(HttpRequest.BodyPublishers.ofByteArray(body)));
  }

  Reply postJson(String path, Object body) {
    try {
      return post(path, "application/json", JSON.writeValueAsBytes(body));
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  /** Creates a video and returns its id, failing unless the server took it. */
  String createVideo(Map<String, Object> fields) {
    Reply r = postJson("/v1/videos", fields);
    assertEquals(200, r.status(), r::text);
    return r.json().get("id").asText();
  }

  /** Polls until the video is terminal; returns its last video object. */
  JsonNode awaitTerminal(String id) {
    return await(id, v -> TERMINAL.contains(v.get("status").asText()), "finish");
  }

  /** Polls until the video has run at least one step; returns its video object then. */
  JsonNode awaitProgress(String id) {
    return await(id, v -> v.get("progress").asInt() > 0, "make progress");
  }

  /** Polls {@code /metrics} until it has the line {@code series} (e.g. {@code "name 1.0"}). */
  void awaitMetric(String series) {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      if (get("/metrics").text().lines().anyMatch(series::equals)) {
        return;
      }
      sleep(5);
    }
    fail("/metrics never showed " + series);
  }

  private JsonNode await(String id, Predicate<JsonNode> reached, String what) {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      JsonNode v = get("/v1/videos/" + id).json();
      if (reached.test(v)) {
        return v;
      }
      sleep(5);
    }
    return fail("video " + id + " did not " + what);
  }

  /** The embedded job store's database and its WAL files, which live in the artifact directory. */
  static boolean isStoreFile(Path f) {
    return f.getFileName().toString().startsWith(dev.stepweave.server.store.JobStores.SQLITE_FILE);
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /**
   * The decoded frames of an MP4. Outputs are compared decoded: the container records its creation
   * time, so equal videos made in different seconds differ in a few header bytes.
   */
  static float[] decoded(Path dir, byte[] mp4) throws IOException {
    Path file = Files.createTempFile(dir, "decoded", ".mp4");
    Files.write(file, mp4);
    return Mp4Reader.read(file).frames().toFloatArray();
  }

  /** The MP4 bytes the same settings give when run alone on a fresh engine. */
  static byte[] serialVideo(Path dir, String prompt, DiffusionParams p) throws Exception {
    return serialVideo(dir, prompt, p, Map.of());
  }

  /** Like {@link #serialVideo(Path, String, DiffusionParams)} with cache plugins turned on. */
  static byte[] serialVideo(
      Path dir, String prompt, DiffusionParams p, Map<String, Map<String, String>> plugins)
      throws Exception {
    return mp4(dir, runAlone(TaskType.T2V, prompt, p, plugins));
  }

  /** The PNG bytes of an image result. */
  static byte[] png(Path dir, GenerationResult r) throws IOException {
    Path file = Files.createTempFile(dir, "serial", ".png");
    PngWriter.writeImage(file, r.artifact(Artifact.ImageArtifact.class).pixels());
    return Files.readAllBytes(file);
  }

  /** The MP4 bytes of a video result. */
  static byte[] mp4(Path dir, GenerationResult r) throws IOException {
    Artifact.VideoArtifact v = r.artifact(Artifact.VideoArtifact.class);
    Path file = Files.createTempFile(dir, "serial", ".mp4");
    Mp4Writer.write(file, v.frames(), v.fps());
    return Files.readAllBytes(file);
  }

  /** The PNG bytes the same settings give when run alone on a fresh engine. */
  static byte[] serialImage(Path dir, String prompt, DiffusionParams p) throws Exception {
    return png(dir, runAlone(TaskType.T2I, prompt, p, Map.of()));
  }

  static GenerationResult runAlone(
      TaskType task, String prompt, DiffusionParams p, Map<String, Map<String, String>> plugins)
      throws Exception {
    return runAlone(
        cached(),
        Request.builder(task, p).id("serial-" + p.seed()).prompt(prompt).plugins(plugins).build());
  }

  /** {@code request} run alone on a fresh engine over a new pattern model with {@code ext}. */
  static GenerationResult runAlone(Extensions ext, Request request) throws Exception {
    try (Engine alone = new Engine(new PatternModel(), EngineConfig.defaults(), ext)) {
      return alone.submit(request).result().get();
    }
  }

  /** The settings a video object reports, as diffusion params. */
  static DiffusionParams paramsOf(JsonNode v) {
    String[] wh = v.get("size").asText().split("x");
    return new DiffusionParams(
        v.get("num_inference_steps").asInt(),
        v.get("guidance_scale").asDouble(),
        v.get("seed").asLong(),
        Integer.parseInt(wh[0]),
        Integer.parseInt(wh[1]),
        v.get("num_frames").asInt(),
        v.get("fps").asInt(),
        "",
        Optional.empty(),
        Optional.empty());
  }

  /**
   * Drains before stopping, so every job a test started has reached a terminal state and closed its
   * output file before the test's temporary folder is removed.
   */
  @Override
  public void close() {
    server.drain();
    server.stop();
    engine.close();
  }
}
