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
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Mp4Writer;
import dev.stepweave.models.wan.WanModel;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code guidance_scale_2} over HTTP: on a two-expert checkpoint it is the second expert's scale
 * (the served video equals the engine's with {@code denoise.guidance_2}); on a one-expert model, or
 * out of bounds, it is a 400 naming it. {@code --experts swap} serves the experts one at a time.
 */
class TwoExpertServeTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  private static final ObjectMapper JSON = new ObjectMapper();
  @TempDir Path tmp;

  private ServeCommand.Serving serve(String checkpoint, String... more) throws java.io.IOException {
    return serve(checkpoint, new StringWriter(), more);
  }

  private ServeCommand.Serving serve(String checkpoint, StringWriter err, String... more)
      throws java.io.IOException {
    ServeCommand cmd = new ServeCommand();
    List<String> args =
        new ArrayList<>(
            List.of(
                "--model",
                GOLDEN.resolve(checkpoint).toString(),
                "--port",
                "0",
                "--artifacts",
                tmp.resolve("artifacts-" + checkpoint).toString()));
    args.addAll(List.of(more));
    new CommandLine(cmd).parseArgs(args.toArray(String[]::new));
    return cmd.start(new PrintWriter(new StringWriter(), true), new PrintWriter(err, true));
  }

  private static HttpResponse<String> post(HttpClient http, String base, String body)
      throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(base + "/v1/videos"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static final String BODY =
      "{\"prompt\":\"a red ball bouncing\",\"size\":\"48x32\",\"num_frames\":5,"
          + "\"num_inference_steps\":4,\"seed\":3,\"fps\":8,\"guidance_scale\":4";

  @Test
  void theSecondScaleReachesTheSecondExpert() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    try (ServeCommand.Serving serving = serve("wan22-moe-tiny")) {
      String base = serving.server().baseUri().toString();
      HttpResponse<String> created = post(http, base, BODY + ",\"guidance_scale_2\":1.5}");
      assertEquals(200, created.statusCode(), created.body());
      JsonNode v = JSON.readTree(created.body());
      String id = v.get("id").asText();
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (!v.get("status").asText().equals("completed") && System.nanoTime() < deadline) {
        assertTrue(v.get("status").asText().matches("queued|in_progress"), v::toString);
        Thread.sleep(50);
        v =
            JSON.readTree(
                http.send(
                        HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id)).build(),
                        HttpResponse.BodyHandlers.ofString())
                    .body());
      }
      assertEquals("completed", v.get("status").asText(), v::toString);
      byte[] served =
          http.send(
                  HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id + "/content"))
                      .build(),
                  HttpResponse.BodyHandlers.ofByteArray())
              .body();
      Request same =
          Request.builder(
                  TaskType.T2V,
                  new DiffusionParams(
                      4, 4.0, 3, 48, 32, 5, 8, "", Optional.empty(), Optional.empty()))
              .prompt("a red ball bouncing")
              .nodeOverrides(Map.of("denoise", Map.of("guidance_2", "1.5")))
              .build();
      Artifact.VideoArtifact alone =
          serving.engine().submit(same).result().get().artifact(Artifact.VideoArtifact.class);
      Path file = tmp.resolve("alone.mp4");
      Mp4Writer.write(file, alone.frames(), alone.fps());
      assertArrayEquals(
          Mp4Reader.read(file).frames().toFloatArray(),
          Mp4Reader.read(Files.write(tmp.resolve("served.mp4"), served)).frames().toFloatArray());

      HttpResponse<String> bad = post(http, base, BODY + ",\"guidance_scale_2\":-1}");
      assertEquals(400, bad.statusCode());
      assertEquals("guidance_scale_2", JSON.readTree(bad.body()).at("/error/param").asText());
    }
  }

  @Test
  void swapServesTheExpertsOneAtATime() throws Exception {
    StringWriter err = new StringWriter();
    try (ServeCommand.Serving serving = serve("wan22-moe-tiny", err, "--experts", "swap")) {
      assertTrue(
          err.toString().contains("experts: one awake at a time (--experts swap)"), err.toString());
      WanModel model = (WanModel) serving.engine().model();
      assertEquals(Optional.of("transformer"), model.swappedComponents().orElseThrow().awake());
      Request request =
          Request.builder(
                  TaskType.T2V,
                  new DiffusionParams(
                      4, 4.0, 3, 48, 32, 5, 8, "", Optional.empty(), Optional.empty()))
              .prompt("a red ball bouncing")
              .build();
      serving.engine().submit(request).result().get();
      assertEquals(1, serving.engine().stats().componentSwitchSeconds().count());
    }
  }

  @Test
  void aOneExpertModelRefusesTheSecondScaleNamingIt() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    try (ServeCommand.Serving serving = serve("wan21-tiny")) {
      HttpResponse<String> r =
          post(
              http,
              serving.server().baseUri().toString(),
              BODY.replace("48x32", "32x32") + ",\"guidance_scale_2\":2}");
      assertEquals(400, r.statusCode(), r.body());
      JsonNode e = JSON.readTree(r.body()).get("error");
      assertEquals("guidance_scale_2", e.get("param").asText());
      assertEquals(
          "denoise.guidance_2 needs a two-expert model; 'wan21-tiny' has one transformer",
          e.get("message").asText());
    }
  }
}
