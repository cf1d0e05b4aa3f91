package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Mp4Writer;
import dev.stepweave.media.PngWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code stepweave serve} end to end with the tiny golden checkpoint: a video and an image through
 * HTTP, each equal to the same request run alone on the same model, and a drain on close.
 */
@Timeout(300)
class ServeCommandTest {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny");
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;
  final HttpClient http = HttpClient.newHttpClient();

  @Test
  void servesTheTinyModelThroughHttp() throws Exception {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd)
        .parseArgs(
            "--model",
            TINY.toString(),
            "--port",
            "0",
            "--artifacts",
            tmp.resolve("artifacts").toString());
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    ServeCommand.Serving serving =
        cmd.start(new PrintWriter(out, true), new PrintWriter(err, true));
    String base = serving.server().baseUri().toString();
    try (serving) {
      assertTrue(out.toString().startsWith("serving "), out.toString());
      assertTrue(out.toString().contains(base), out.toString());
      String modelId = serving.wan().card().modelId();
      assertEquals(modelId, get(base + "/v1/models").at("/data/0/id").asText());

      JsonNode created =
          post(
              base + "/v1/videos",
              "{\"prompt\":\"a red ball bouncing\",\"size\":\"32x32\",\"num_frames\":5,"
                  + "\"num_inference_steps\":2,\"seed\":3,\"fps\":8,\"guidance_scale\":3}");
      String id = created.get("id").asText();
      JsonNode done = created;
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (!done.get("status").asText().equals("completed") && System.nanoTime() < deadline) {
        assertTrue(done.get("status").asText().matches("queued|in_progress"), done::toString);
        Thread.sleep(50);
        done = get(base + "/v1/videos/" + id);
      }
      assertEquals("completed", done.get("status").asText(), done::toString);
      for (String loop : new String[] {"text_encode", "denoise", "vae_decode"}) {
        assertTrue(done.at("/timings/loops_s").has(loop), done::toString);
      }
      HttpResponse<byte[]> content =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id + "/content")).build(),
              HttpResponse.BodyHandlers.ofByteArray());
      assertEquals(200, content.statusCode());
      DiffusionParams video = params(3, 5);
      // Compared decoded: the MP4 header records its creation time.
      assertArrayEquals(
          decoded(alone(serving.engine(), TaskType.T2V, video, ".mp4")), decoded(content.body()));

      JsonNode images =
          post(
              base + "/v1/images/generations",
              "{\"prompt\":\"a red ball\",\"size\":\"32x32\",\"num_inference_steps\":2,"
                  + "\"seed\":9,\"n\":1,\"guidance_scale\":3}");
      byte[] png = Base64.getDecoder().decode(images.at("/data/0/b64_json").asText());
      assertArrayEquals(alone(serving.engine(), TaskType.T2I, params(9, 1), ".png"), png);
    }
    assertTrue(err.toString().contains("stepweave: stopped"), err.toString());
  }

  @Test
  void anApiKeyFileGuardsEveryCallButTheProbes() throws Exception {
    Path keys = tmp.resolve("keys.txt");
    Files.writeString(keys, "# ops\nk-0123456789abcdef-alice alice\n");
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd)
        .parseArgs(
            "--model",
            TINY.toString(),
            "--port",
            "0",
            "--api-key-file",
            keys.toString(),
            "--access-log",
            tmp.resolve("access.log").toString(),
            "--artifacts",
            tmp.resolve("artifacts").toString());
    StringWriter out = new StringWriter();
    try (ServeCommand.Serving serving =
        cmd.start(new PrintWriter(out, true), new PrintWriter(new StringWriter(), true))) {
      assertTrue(out.toString().contains("API keys from " + keys), out.toString());
      assertTrue(out.toString().contains("(admin " + serving.server().adminUri()), out.toString());
      URI models = URI.create(serving.server().baseUri() + "/v1/models");
      assertEquals(
          401,
          http.send(HttpRequest.newBuilder(models).build(), HttpResponse.BodyHandlers.discarding())
              .statusCode());
      assertEquals(
          200,
          http.send(
                  HttpRequest.newBuilder(models)
                      .header("Authorization", "Bearer k-0123456789abcdef-alice")
                      .build(),
                  HttpResponse.BodyHandlers.discarding())
              .statusCode());
      URI health = URI.create(serving.server().adminUri() + "/health");
      assertEquals(
          200,
          http.send(HttpRequest.newBuilder(health).build(), HttpResponse.BodyHandlers.discarding())
              .statusCode());
    }
  }

  @Test
  void costLimitsComeFromTheFlagsAndPutABigRequestInTheJumboClass() throws Exception {
    ServeCommand bad = new ServeCommand();
    new CommandLine(bad).parseArgs("--model", TINY.toString(), "--max-step-seconds", "0");
    IllegalArgumentException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class,
            () ->
                bad.start(
                    new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter())));
    assertEquals(
        "--max-step-seconds must be a positive number of seconds, got 0.0", e.getMessage());

    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd)
        .parseArgs(
            "--model",
            TINY.toString(),
            "--port",
            "0",
            "--artifacts",
            tmp.resolve("artifacts").toString(),
            "--max-step-seconds",
            "0.000001",
            "--jumbo-class",
            "--no-drain-await-downloads");
    StringWriter err = new StringWriter();
    try (ServeCommand.Serving serving =
        cmd.start(new PrintWriter(new StringWriter(), true), new PrintWriter(err, true))) {
      assertTrue(
          err.toString()
              .contains(
                  "stepweave: admission: a request may cost 0.000001 s a step and 3600 s in all,"
                      + " as the cost model predicts; over that it is run in the jumbo class"),
          err.toString());
      String base = serving.server().baseUri().toString();
      JsonNode card = get(base + "/v1/deployment");
      assertEquals(0.000001, card.at("/limits/max_step_seconds").asDouble());
      assertTrue(card.at("/limits/jumbo_class").asBoolean());
      JsonNode created =
          post(
              base + "/v1/videos",
              "{\"prompt\":\"a red ball\",\"size\":\"32x32\",\"num_frames\":5,"
                  + "\"num_inference_steps\":2}");
      assertEquals("jumbo", created.at("/cost/class").asText(), created::toString);
      assertTrue(created.at("/cost/largest_step_seconds").asDouble() > 0.000001);
      // Cancelled, so that the drain on close does not wait for it.
      http.send(
          HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + created.get("id").asText()))
              .DELETE()
              .build(),
          HttpResponse.BodyHandlers.discarding());
    }
  }

  @Test
  void aPublicAddressWithoutKeysIsRefusedNamingTheWayOut() {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd).parseArgs("--model", TINY.toString(), "--host", "0.0.0.0", "--port", "0");
    IllegalArgumentException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class,
            () ->
                cmd.start(
                    new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter())));
    assertEquals(
        "--host 0.0.0.0 is not a loopback address and no --api-key-file is given: anyone who"
            + " reaches it could run, list and delete every job; give --api-key-file, or"
            + " --insecure-bind to serve everyone anyway",
        e.getMessage());
  }

  /**
   * The load test against the real tiny model: 12 concurrent video jobs and 4 image calls through
   * HTTP, 3 videos deleted once submitted. Every other job completes, none is lost, the deleted
   * ones are gone, and every completed video equals the same request run alone.
   */
  @Test
  void concurrentMixedLoadWithCancellations() throws Exception {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd)
        .parseArgs(
            "--model",
            TINY.toString(),
            "--port",
            "0",
            "--artifacts",
            tmp.resolve("load").toString());
    ServeCommand.Serving serving =
        cmd.start(
            new PrintWriter(new StringWriter(), true), new PrintWriter(new StringWriter(), true));
    String base = serving.server().baseUri().toString();
    // Closed in reverse order: the pool waits for its clients, then the server drains their jobs.
    try (serving;
        var pool = java.util.concurrent.Executors.newFixedThreadPool(16)) {
      java.util.List<java.util.concurrent.Future<String>> videos = new java.util.ArrayList<>();
      for (int i = 0; i < 12; i++) {
        long seed = 100 + i;
        int steps = 2 + i % 3;
        videos.add(
            pool.submit(
                () ->
                    post(
                            base + "/v1/videos",
                            "{\"prompt\":\"a red ball bouncing\",\"size\":\"32x32\",\"num_frames\":5,"
                                + "\"num_inference_steps\":"
                                + steps
                                + ",\"seed\":"
                                + seed
                                + ",\"fps\":8,\"guidance_scale\":3}")
                        .get("id")
                        .asText()));
      }
      java.util.List<java.util.concurrent.Future<JsonNode>> images = new java.util.ArrayList<>();
      for (int i = 0; i < 4; i++) {
        long seed = 200 + i;
        images.add(
            pool.submit(
                () ->
                    post(
                        base + "/v1/images/generations",
                        "{\"prompt\":\"a red ball\",\"size\":\"32x32\",\"num_inference_steps\":2,\"seed\":"
                            + seed
                            + ",\"n\":1,\"guidance_scale\":3}")));
      }
      java.util.List<String> ids = new java.util.ArrayList<>();
      for (var f : videos) {
        ids.add(f.get(120, java.util.concurrent.TimeUnit.SECONDS));
      }
      // Delete three of them (OpenAI's DELETE): a job still queued or running is cancelled at its
      // next step boundary, a finished one forgotten; either way it is gone at once.
      java.util.Set<String> deleted = new java.util.HashSet<>();
      for (String id : ids.subList(9, 12)) {
        HttpResponse<String> d =
            http.send(
                HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id)).DELETE().build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, d.statusCode(), d.body());
        assertEquals("video.deleted", JSON.readTree(d.body()).get("object").asText(), d.body());
        deleted.add(id);
      }
      for (var f : images) {
        assertEquals(1, f.get(120, java.util.concurrent.TimeUnit.SECONDS).get("data").size());
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
      for (int i = 0; i < ids.size(); i++) {
        String id = ids.get(i);
        if (deleted.contains(id)) {
          HttpResponse<String> gone =
              http.send(
                  HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id)).build(),
                  HttpResponse.BodyHandlers.ofString());
          assertEquals(404, gone.statusCode(), gone.body());
          continue;
        }
        JsonNode job = get(base + "/v1/videos/" + id);
        while (job.get("status").asText().matches("queued|in_progress")
            && System.nanoTime() < deadline) {
          Thread.sleep(50);
          job = get(base + "/v1/videos/" + id);
        }
        String status = job.get("status").asText();
        assertEquals("completed", status, job::toString);
        HttpResponse<byte[]> content =
            http.send(
                HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id + "/content")).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, content.statusCode());
        DiffusionParams p =
            new DiffusionParams(
                2 + i % 3, 3.0, 100 + i, 32, 32, 5, 8, "", Optional.empty(), Optional.empty());
        assertArrayEquals(
            decoded(alone(serving.engine(), TaskType.T2V, p, ".mp4")),
            decoded(content.body()),
            "video " + i);
      }
    }
  }

  private static DiffusionParams params(long seed, int frames) {
    return new DiffusionParams(
        2, 3.0, seed, 32, 32, frames, 8, "", Optional.empty(), Optional.empty());
  }

  /** The same settings submitted straight to the engine, written as the server writes them. */
  private byte[] alone(Engine engine, TaskType task, DiffusionParams p, String ext)
      throws Exception {
    String prompt = task == TaskType.T2V ? "a red ball bouncing" : "a red ball";
    GenerationResult r = engine.submit(Request.text(task, prompt, p)).result().get();
    Path file = Files.createTempFile(tmp, "alone", ext);
    if (task == TaskType.T2V) {
      Artifact.VideoArtifact v = r.artifact(Artifact.VideoArtifact.class);
      Mp4Writer.write(file, v.frames(), v.fps());
    } else {
      PngWriter.writeImage(file, r.artifact(Artifact.ImageArtifact.class).pixels());
    }
    return Files.readAllBytes(file);
  }

  private float[] decoded(byte[] mp4) throws Exception {
    Path file = Files.createTempFile(tmp, "served", ".mp4");
    Files.write(file, mp4);
    return Mp4Reader.read(file).frames().toFloatArray();
  }

  private JsonNode get(String uri) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(uri)).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  private JsonNode post(String uri, String json) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(uri))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }
}
