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
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stepweave serve} as a child process on loopback, killed with SIGKILL (and, separately,
 * stopped with SIGTERM) while a job runs, then started again on the same artifact directory: the
 * job finished before the kill is still listed and downloadable, and the running one resumes from
 * its checkpoint file to the frames of an uninterrupted run.
 */
@Timeout(300)
class ServeRestartTest {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny");
  static final ObjectMapper JSON = new ObjectMapper();
  static final Pattern SERVING = Pattern.compile("serving .* on (http://127\\.0\\.0\\.1:\\d+) ");

  @TempDir Path tmp;
  final HttpClient http = HttpClient.newHttpClient();
  final List<Process> children = new ArrayList<>();

  @AfterEach
  void killChildren() {
    children.forEach(Process::destroyForcibly);
  }

  /** A server process; returns it with its base URI once it listens. */
  record Child(Process process, String base, StringBuilder log, Thread reader) {
    /** Waits for the process to exit and its output to be read. */
    void awaitExit() throws InterruptedException {
      assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the server did not exit");
      reader.join(10_000);
    }

    String output() {
      synchronized (log) {
        return log.toString();
      }
    }
  }

  Child serve(Path artifacts) throws Exception {
    Process p =
        new ProcessBuilder(
                ProcessHandle.current().info().command().orElseThrow(),
                "--add-modules",
                "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED",
                "-Xss4m",
                "-cp",
                System.getProperty("java.class.path"),
                StepweaveCli.class.getName(),
                "serve",
                "--model",
                TINY.toString(),
                "--backend",
                "cpu",
                "--port",
                "0",
                "--artifacts",
                artifacts.toString(),
                "--checkpoint-interval",
                "0s",
                // A drain stops running jobs at once: SIGTERM leaves one to resume.
                "--drain-timeout",
                "0",
                "--no-drain-await-downloads")
            .redirectErrorStream(true)
            .start();
    children.add(p);
    StringBuilder log = new StringBuilder();
    CompletableFuture<String> base = new CompletableFuture<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                  synchronized (log) {
                    log.append(line).append('\n');
                  }
                  Matcher m = SERVING.matcher(line);
                  if (m.find()) {
                    base.complete(m.group(1));
                  }
                }
              } catch (java.io.IOException e) {
                // the child is gone
              }
              base.completeExceptionally(new AssertionError("server exited:\n" + log));
            });
    reader.setDaemon(true);
    reader.start();
    return new Child(p, base.get(120, TimeUnit.SECONDS), log, reader);
  }

  static final String SLOW =
      "{\"prompt\":\"a red ball bouncing\",\"size\":\"32x32\",\"num_frames\":5,"
          + "\"num_inference_steps\":12,\"seed\":11,\"fps\":8,\"guidance_scale\":3}";
  static final String QUICK =
      "{\"prompt\":\"a red ball bouncing\",\"size\":\"32x32\",\"num_frames\":5,"
          + "\"num_inference_steps\":2,\"seed\":3,\"fps\":8,\"guidance_scale\":3}";

  @Test
  void aKilledServerResumesItsRunningJobAndKeepsItsFinishedOne() throws Exception {
    Path dir = tmp.resolve("artifacts");
    Child first = serve(dir);
    String finished = post(first.base(), QUICK).get("id").asText();
    JsonNode done = awaitStatus(first.base(), finished, "completed");
    byte[] finishedBytes = content(first.base(), finished);
    String running = post(first.base(), SLOW).get("id").asText();
    awaitCheckpoint(dir.resolve(running + ".checkpoint"));
    first.process().destroyForcibly(); // SIGKILL: no drain, no flush
    first.awaitExit();
    assertEquals(137, first.process().exitValue(), "killed by SIGKILL");

    Child second = serve(dir);
    assertTrue(second.output().contains("1 jobs resumed from checkpoints"), second::output);
    assertEquals("completed", get(second.base(), "/v1/videos/" + finished).get("status").asText());
    assertArrayEquals(finishedBytes, content(second.base(), finished), "the same file");
    JsonNode resumed = awaitStatus(second.base(), running, "completed");
    assertEquals(11, resumed.get("seed").asLong());
    assertArrayEquals(
        uninterrupted(slowParams()), decoded(content(second.base(), running)), "frames");
    assertTrue(done.get("completed_at").asLong() > 0);
  }

  @Test
  void aServerStoppedWithSigtermResumesTheJobItCouldNotFinish() throws Exception {
    Path dir = tmp.resolve("artifacts");
    Child first = serve(dir);
    String running = post(first.base(), SLOW).get("id").asText();
    awaitCheckpoint(dir.resolve(running + ".checkpoint"));
    // SIGTERM through kill(1): in a Surefire fork the child did not run its shutdown hooks when
    // sent Process.destroy()'s SIGTERM (exit 143, no drain), while kill -TERM drains as in
    // production. The drain stops the job at its next step.
    Process kill =
        new ProcessBuilder("kill", "-TERM", Long.toString(first.process().pid()))
            .inheritIO()
            .start();
    assertEquals(0, kill.waitFor());
    first.awaitExit();
    assertTrue(
        first.output().contains("stepweave: stopped"),
        () -> "exit " + first.process().exitValue() + ":\n" + first.output());
    assertTrue(first.output().contains("drain timeout reached"), first::output);

    Child second = serve(dir);
    JsonNode resumed = awaitStatus(second.base(), running, "completed");
    assertTrue(second.output().contains("1 jobs resumed from checkpoints"), second::output);
    assertArrayEquals(
        uninterrupted(slowParams()), decoded(content(second.base(), running)), "frames");
    assertEquals(100, resumed.get("progress").asInt());
  }

  static DiffusionParams slowParams() {
    return new DiffusionParams(12, 3.0, 11, 32, 32, 5, 8, "", Optional.empty(), Optional.empty());
  }

  /** The decoded frames of the same request run straight through, in this process. */
  float[] uninterrupted(DiffusionParams p) throws Exception {
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model)) {
      GenerationResult r =
          engine.submit(Request.text(TaskType.T2V, "a red ball bouncing", p)).result().get();
      Artifact.VideoArtifact v = r.artifact(Artifact.VideoArtifact.class);
      Path file = Files.createTempFile(tmp, "uninterrupted", ".mp4");
      Mp4Writer.write(file, v.frames(), v.fps());
      return Mp4Reader.read(file).frames().toFloatArray();
    }
  }

  float[] decoded(byte[] mp4) throws Exception {
    Path file = Files.createTempFile(tmp, "served", ".mp4");
    Files.write(file, mp4);
    return Mp4Reader.read(file).frames().toFloatArray();
  }

  static void awaitCheckpoint(Path file) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
    while (!Files.exists(file)) {
      assertTrue(System.nanoTime() < deadline, "no checkpoint " + file);
      Thread.sleep(10);
    }
  }

  JsonNode awaitStatus(String base, String id, String status) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
    JsonNode v = get(base, "/v1/videos/" + id);
    while (!v.get("status").asText().equals(status)) {
      assertTrue(v.get("status").asText().matches("queued|in_progress"), v::toString);
      assertTrue(System.nanoTime() < deadline, v::toString);
      Thread.sleep(50);
      v = get(base, "/v1/videos/" + id);
    }
    return v;
  }

  byte[] content(String base, String id) throws Exception {
    HttpResponse<byte[]> r =
        http.send(
            HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id + "/content")).build(),
            HttpResponse.BodyHandlers.ofByteArray());
    assertEquals(200, r.statusCode());
    return r.body();
  }

  JsonNode get(String base, String path) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(base + path)).build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  JsonNode post(String base, String json) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(base + "/v1/videos"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }
}
