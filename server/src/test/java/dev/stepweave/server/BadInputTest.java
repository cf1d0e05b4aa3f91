package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Every refusal: its status, and OpenAI's error object naming the field at fault. */
@Timeout(60)
class BadInputTest {
  @TempDir static Path tmp;
  static Harness h;

  @BeforeAll
  static void start() throws Exception {
    h = new Harness(tmp.resolve("artifacts"));
  }

  @AfterAll
  static void stop() {
    h.close();
  }

  static Stream<Arguments> badVideos() {
    return Stream.of(
        Arguments.of("{}", 400, "prompt"),
        Arguments.of("{\"prompt\":\"  \"}", 400, "prompt"),
        Arguments.of("{\"prompt\":\"x\",\"size\":\"100x100\"}", 400, "size"),
        Arguments.of("{\"prompt\":\"x\",\"size\":\"big\"}", 400, "size"),
        Arguments.of("{\"prompt\":\"x\",\"size\":\"4096x4096\"}", 400, "size"),
        Arguments.of("{\"prompt\":\"x\",\"num_frames\":4}", 400, "num_frames"),
        Arguments.of("{\"prompt\":\"x\",\"num_frames\":1001}", 400, "num_frames"),
        Arguments.of("{\"prompt\":\"x\",\"seconds\":\"-1\"}", 400, "seconds"),
        Arguments.of("{\"prompt\":\"x\",\"seconds\":\"forever\"}", 400, "seconds"),
        Arguments.of("{\"prompt\":\"x\",\"seconds\":\"3600\"}", 400, "seconds"),
        Arguments.of("{\"prompt\":\"x\",\"num_inference_steps\":0}", 400, "num_inference_steps"),
        Arguments.of("{\"prompt\":\"x\",\"num_inference_steps\":101}", 400, "num_inference_steps"),
        Arguments.of("{\"prompt\":\"x\",\"guidance_scale\":\"NaN\"}", 400, "guidance_scale"),
        Arguments.of("{\"prompt\":\"x\",\"seed\":-3}", 400, "seed"),
        Arguments.of("{\"prompt\":\"x\",\"fps\":0}", 400, "fps"),
        Arguments.of("{\"prompt\":\"x\",\"colour\":\"red\"}", 400, "colour"),
        Arguments.of("{\"prompt\":{\"nested\":1}}", 400, "prompt"),
        Arguments.of("{\"prompt\":\"x\",\"model\":\"sora-2\"}", 404, "model"),
        Arguments.of("[1,2]", 400, null),
        Arguments.of("{\"prompt\":", 400, null));
  }

  @ParameterizedTest
  @MethodSource("badVideos")
  void refusesBadVideoRequests(String body, int status, String param) {
    Harness.Reply r =
        h.post("/v1/videos", "application/json", body.getBytes(StandardCharsets.UTF_8));
    assertError(r, status, param);
  }

  @Test
  void refusesLongPromptsLargeBodiesAndOtherContentTypes() {
    assertError(h.postJson("/v1/videos", Map.of("prompt", "p".repeat(4001))), 400, "prompt");
    // A video call's body may carry one input image beside the fields; an image call's may not.
    int videoBody = ServerConfig.defaults().maxVideoBodyBytes();
    byte[] huge =
        ("{\"prompt\":\"" + "p".repeat(videoBody) + "\"}").getBytes(StandardCharsets.UTF_8);
    assertError(h.post("/v1/videos", "application/json", huge), 413, null);
    byte[] overImageBody =
        ("{\"prompt\":\"" + "p".repeat(1 << 20) + "\"}").getBytes(StandardCharsets.UTF_8);
    assertError(h.post("/v1/images/generations", "application/json", overImageBody), 413, null);
    assertError(
        h.post("/v1/videos", "text/plain", "prompt".getBytes(StandardCharsets.UTF_8)), 415, null);
    // An image to this text-to-video card (InputReferenceApiTest has the rest).
    String fileUpload =
        "--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nx\r\n"
            + "--b\r\nContent-Disposition: form-data; name=\"input_reference\"; filename=\"a.png\"\r\n"
            + "Content-Type: image/png\r\n\r\nPNG\r\n--b--\r\n";
    assertError(
        h.post(
            "/v1/videos",
            "multipart/form-data; boundary=b",
            fileUpload.getBytes(StandardCharsets.UTF_8)),
        400,
        "input_reference");
    assertError(
        h.post(
            "/v1/videos",
            "multipart/form-data; boundary=b",
            "no parts here".getBytes(StandardCharsets.UTF_8)),
        400,
        null);
  }

  @Test
  void unknownIdsRoutesAndMethods() {
    String unknown = "video_" + "0".repeat(32);
    assertError(h.get("/v1/videos/" + unknown), 404, null);
    assertError(h.get("/v1/videos/" + unknown + "/content"), 404, null);
    assertError(h.delete("/v1/videos/" + unknown), 404, null);
    assertError(h.get("/v1/videos/not-an-id"), 404, null);
    assertError(h.get("/v1/nothing"), 404, null);
    assertError(h.delete("/v1/models"), 405, null);
    assertError(h.get("/v1/videos?limit=0"), 400, "limit");
    assertError(h.get("/v1/videos?after=" + unknown), 400, "after");
  }

  @Test
  void contentOfAnUnfinishedJobIsAConflict() {
    String id = h.createVideo(Map.of("prompt", "slow unfinished", "num_inference_steps", 100));
    assertError(h.get("/v1/videos/" + id + "/content"), 409, null);
    assertEquals(200, h.delete("/v1/videos/" + id).status());
    assertError(h.get("/v1/videos/" + id + "/content"), 404, null);
    h.awaitMetric("stepweave_pending_jobs 0.0"); // the deleted job has stopped
  }

  @Test
  void contentPathsCannotLeaveTheArtifactDirectory() throws Exception {
    Path secret = h.server.artifactDir().getParent().resolve("secret.mp4");
    Files.writeString(secret, "not yours");
    for (String path :
        new String[] {
          "/v1/videos/../secret/content",
          "/v1/videos/..%2Fsecret/content",
          "/v1/videos/%2e%2e%2fsecret/content",
          "/v1/videos/video_..%2F..%2Fsecret/content",
          "/v1/videos/video_" + "0".repeat(31) + "%2F/content",
          "/v1/videos/%2Fetc%2Fpasswd/content",
        }) {
      Harness.Reply r = h.get(path);
      assertTrue(r.status() == 404 || r.status() == 400, path + " gave " + r.status());
      assertTrue(!r.text().contains("not yours"), path);
    }
    // Jetty refuses an encoded '/' in a path outright, before any route sees it: a JSON 400.
    assertError(h.get("/v1/videos/..%2F..%2Fsecret"), 400, null);
    assertError(h.get("/v1/videos/video_" + "0".repeat(32) + "/content"), 404, null);
  }

  @Test
  void refusesBadImageRequests() {
    assertError(h.postJson("/v1/images/generations", Map.of("prompt", "x", "n", 5)), 400, "n");
    assertError(h.postJson("/v1/images/generations", Map.of("prompt", "x", "n", 0)), 400, "n");
    assertError(
        h.postJson("/v1/images/generations", Map.of("prompt", "x", "response_format", "url")),
        400,
        "response_format");
    assertError(h.postJson("/v1/images/generations", Map.of("n", 1)), 400, "prompt");
    assertError(
        h.postJson("/v1/images/generations", Map.of("prompt", "x", "size", "17x17")), 400, "size");
  }

  static void assertError(Harness.Reply r, int status, String param) {
    assertEquals(status, r.status(), r::text);
    assertTrue(r.contentType().startsWith("application/json"), r.contentType());
    JsonNode e = r.json().get("error");
    assertTrue(e != null && e.isObject(), r::text);
    assertTrue(e.get("message").isTextual() && !e.get("message").asText().isBlank(), r::text);
    assertTrue(e.get("type").isTextual(), r::text);
    assertTrue(e.has("param") && e.has("code"), r::text);
    if (param != null) {
      assertEquals(param, e.get("param").asText(), r::text);
    }
  }
}
