package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.media.Mp4Reader;
import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Image-to-video end to end on the golden Wan2.1 I2V checkpoint: {@code generate --image} writes
 * the video, and {@code serve} takes {@code input_reference} as a multipart file and finishes the
 * job; a text-only request to that checkpoint is refused naming how to give the image.
 */
@Timeout(300)
class ImageToVideoEndToEndTest {
  static final Path I2V = Path.of(System.getProperty("stepweave.golden")).resolve("wan21-i2v-tiny");
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;

  @Test
  void generateWithAnImageWritesTheVideoAndSaysWhatItUsed() throws Exception {
    Path image = GenerateImageTest.png(tmp.resolve("first.png"), 48, 40);
    Path out = tmp.resolve("boat.mp4");
    var r =
        CliHarness.run(
            "generate",
            "a paper boat",
            "--model",
            I2V.toString(),
            "--image",
            image.toString(),
            "--size",
            "32x32",
            "--frames",
            "5",
            "--steps",
            "2",
            "--seed",
            "1",
            "-o",
            out.toString());
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().contains("request i2v 32x32, 5 frames"), r.out());
    String sha = sha256(Files.readAllBytes(image));
    assertTrue(
        r.out()
            .contains(
                "image   "
                    + image
                    + " (48x40 png, sha256 "
                    + sha.substring(0, 16)
                    + "; the model resizes it to 32x32)"),
        r.out());
    assertTrue(r.out().lines().anyMatch(l -> l.strip().startsWith("vae_encode")), r.out());
    assertEquals(5, Mp4Reader.read(out).frames().dim(0));
  }

  @Test
  void withoutAnImageTheI2vCheckpointRefusesNamingTheOption() {
    Path out = tmp.resolve("none.mp4");
    var r =
        CliHarness.run(
            "generate", "x", "--model", I2V.toString(), "--size", "32x32", "-o", out.toString());
    assertEquals(StepweaveCli.ExitCodes.USAGE, r.exit());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(
        r.err()
            .contains(
                "model 'wan21-i2v-tiny' needs an input image, its first frame (it serves i2v):"
                    + " give --image"),
        r.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void serveTakesInputReferenceAsAMultipartFileAndFinishesTheVideo() throws Exception {
    byte[] png = Files.readAllBytes(GenerateImageTest.png(tmp.resolve("ref.png"), 40, 24));
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd)
        .parseArgs(
            "--model",
            I2V.toString(),
            "--port",
            "0",
            "--artifacts",
            tmp.resolve("artifacts").toString());
    ServeCommand.Serving serving =
        cmd.start(new PrintWriter(new StringWriter(), true), new PrintWriter(new StringWriter()));
    try (serving) {
      String base = serving.server().baseUri().toString();
      HttpClient http = HttpClient.newHttpClient();
      String boundary = "----stepweave-e2e";
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      for (String[] f :
          new String[][] {
            {"prompt", "a paper boat"},
            {"size", "32x32"},
            {"num_frames", "5"},
            {"num_inference_steps", "2"},
            {"seed", "4"}
          }) {
        body.writeBytes(
            ("--"
                    + boundary
                    + "\r\nContent-Disposition: form-data; name=\""
                    + f[0]
                    + "\"\r\n\r\n"
                    + f[1]
                    + "\r\n")
                .getBytes(StandardCharsets.UTF_8));
      }
      body.writeBytes(
          ("--"
                  + boundary
                  + "\r\nContent-Disposition: form-data; name=\"input_reference\";"
                  + " filename=\"ref.png\"\r\nContent-Type: image/png\r\n\r\n")
              .getBytes(StandardCharsets.UTF_8));
      body.writeBytes(png);
      body.writeBytes(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8));
      HttpResponse<String> created =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/videos"))
                  .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                  .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(200, created.statusCode(), created.body());
      JsonNode v = JSON.readTree(created.body());
      assertEquals("i2v", v.get("task").asText());
      assertEquals(sha256(png), v.at("/input_reference/sha256").asText());
      String id = v.get("id").asText();
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (!v.get("status").asText().equals("completed") && System.nanoTime() < deadline) {
        assertTrue(v.get("status").asText().matches("queued|in_progress"), v::toString);
        Thread.sleep(50);
        v = JSON.readTree(get(http, base + "/v1/videos/" + id).body());
      }
      assertEquals("completed", v.get("status").asText(), v::toString);
      HttpResponse<byte[]> content =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id + "/content")).build(),
              HttpResponse.BodyHandlers.ofByteArray());
      assertEquals(200, content.statusCode());
      Path mp4 = Files.write(tmp.resolve("served.mp4"), content.body());
      assertEquals(5, Mp4Reader.read(mp4).frames().dim(0));

      // No image: the checkpoint serves i2v only.
      HttpResponse<String> refused =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/videos"))
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"a paper boat\"}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(400, refused.statusCode(), refused.body());
      assertEquals("input_reference", JSON.readTree(refused.body()).at("/error/param").asText());
    }
  }

  private static HttpResponse<String> get(HttpClient http, String uri) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(uri)).build(), HttpResponse.BodyHandlers.ofString());
  }

  static String sha256(byte[] data) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }
}
