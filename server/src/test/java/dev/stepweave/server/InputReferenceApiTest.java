package dev.stepweave.server;

import static dev.stepweave.server.BadInputTest.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code input_reference} on {@code POST /v1/videos}: a multipart file as OpenAI's SDKs send it, a
 * data URL (or OpenAI's {"image_url": …} object) in JSON, against image-to-video, text-and-image
 * and text-only cards; and every refusal, which queues nothing and leaves nothing behind.
 */
@Timeout(60)
class InputReferenceApiTest {
  private static final String BOUNDARY = "----stepweave-image";

  @TempDir Path tmp;

  private Harness serving(String id, TaskType... tasks) throws IOException {
    return serving(ServerConfig.defaults(), id, tasks);
  }

  private Harness serving(ServerConfig config, String id, TaskType... tasks) throws IOException {
    return new Harness(
        tmp.resolve("artifacts-" + id), config, Extensions.NONE, PatternModel.serving(id, tasks));
  }

  /** A w×h image in {@code format} (png, jpg, gif) whose colour follows {@code shade}. */
  static byte[] image(String format, int w, int h, int shade) throws IOException {
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    for (int y = 0; y < h; y++) {
      for (int x = 0; x < w; x++) {
        img.setRGB(x, y, (shade << 16) | ((x * 255 / w) << 8) | (y * 255 / h));
      }
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertTrue(ImageIO.write(img, format, out), "no " + format + " writer");
    return out.toByteArray();
  }

  static String sha256(byte[] data) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }

  static String dataUrl(String type, byte[] file) {
    return "data:" + type + ";base64," + Base64.getEncoder().encodeToString(file);
  }

  /** A multipart part: a text field, or a file when {@code filename} is given. */
  record Part(String name, String filename, String contentType, byte[] content) {
    static Part text(String name, String value) {
      return new Part(name, null, null, value.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** A multipart body as OpenAI's SDKs (and curl -F) send it. */
  static byte[] multipart(List<Part> parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Part p : parts) {
      StringBuilder head =
          new StringBuilder("--" + BOUNDARY + "\r\nContent-Disposition: form-data; name=\"")
              .append(p.name())
              .append('"');
      if (p.filename() != null) {
        head.append("; filename=\"").append(p.filename()).append('"');
      }
      head.append("\r\n");
      if (p.contentType() != null) {
        head.append("Content-Type: ").append(p.contentType()).append("\r\n");
      }
      head.append("\r\n");
      out.writeBytes(head.toString().getBytes(StandardCharsets.UTF_8));
      out.writeBytes(p.content());
      out.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
    }
    out.writeBytes(("--" + BOUNDARY + "--\r\n").getBytes(StandardCharsets.UTF_8));
    return out.toByteArray();
  }

  private static List<Part> fields(String prompt, Part... more) {
    List<Part> parts = new ArrayList<>();
    parts.add(Part.text("prompt", prompt));
    parts.add(Part.text("size", "32x32"));
    parts.add(Part.text("num_inference_steps", "2"));
    parts.add(Part.text("seed", "5"));
    parts.addAll(List.of(more));
    return parts;
  }

  private static Harness.Reply postMultipart(Harness h, List<Part> parts) {
    return h.post("/v1/videos", "multipart/form-data; boundary=" + BOUNDARY, multipart(parts));
  }

  private static Map<String, Object> json(Object inputReference) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("prompt", "a paper boat");
    body.put("size", "32x32");
    body.put("num_inference_steps", 2);
    body.put("seed", 5);
    body.put("input_reference", inputReference);
    return body;
  }

  private static JsonNode completed(Harness h, Harness.Reply created) {
    assertEquals(200, created.status(), created::text);
    JsonNode v = h.awaitTerminal(created.json().get("id").asText());
    assertEquals("completed", v.get("status").asText(), v::toString);
    Harness.Reply content = h.get("/v1/videos/" + v.get("id").asText() + "/content");
    assertEquals(200, content.status());
    assertEquals("video/mp4", content.contentType());
    return v;
  }

  @Test
  void aMultipartFileAsOpenAiSdksSendItRunsAnI2vJobFromThatImage() throws Exception {
    byte[] png = image("png", 40, 24, 200);
    try (Harness h = serving("pattern-i2v", TaskType.I2V)) {
      Harness.Reply r =
          postMultipart(
              h, fields("a paper boat", new Part("input_reference", "boat.png", "image/png", png)));
      assertEquals(200, r.status(), r::text);
      JsonNode created = r.json();
      assertEquals("i2v", created.get("task").asText());
      JsonNode ref = created.get("input_reference");
      assertEquals(sha256(png), ref.get("sha256").asText());
      assertEquals(40, ref.get("width").asInt());
      assertEquals(24, ref.get("height").asInt());
      assertEquals("png", ref.get("format").asText());
      assertEquals(png.length, ref.get("bytes").asLong());
      JsonNode done = completed(h, r);
      assertEquals(ref, done.get("input_reference"), "the finished job reports the same image");
      assertEquals(List.of(sha256(png)), h.model.receivedImages());
    }
  }

  @Test
  void aJsonDataUrlAndOpenAisReferenceObjectBothWorkAndTheImageReachesTheOutput() throws Exception {
    byte[] dark = image("png", 16, 16, 10);
    byte[] bright = image("jpg", 16, 16, 250);
    try (Harness h = serving("pattern-i2v", TaskType.I2V)) {
      JsonNode a = completed(h, h.postJson("/v1/videos", json(dataUrl("image/png", dark))));
      JsonNode b =
          completed(
              h,
              h.postJson("/v1/videos", json(Map.of("image_url", dataUrl("image/jpeg", bright)))));
      assertEquals("png", a.get("input_reference").get("format").asText());
      assertEquals("jpeg", b.get("input_reference").get("format").asText());
      assertEquals(List.of(sha256(dark), sha256(bright)), h.model.receivedImages());
      // Same prompt, seed and settings: only the image differs, and so does the video.
      byte[] videoA = h.get("/v1/videos/" + a.get("id").asText() + "/content").body();
      byte[] videoB = h.get("/v1/videos/" + b.get("id").asText() + "/content").body();
      assertNotEquals(
          java.util.Arrays.toString(Harness.decoded(tmp, videoA)),
          java.util.Arrays.toString(Harness.decoded(tmp, videoB)));
    }
  }

  @Test
  void aDataUrlWorksAsAFormTextFieldToo() throws Exception {
    byte[] png = image("png", 8, 8, 90);
    try (Harness h = serving("pattern-i2v", TaskType.I2V)) {
      JsonNode v =
          completed(
              h,
              postMultipart(
                  h, fields("x", Part.text("input_reference", dataUrl("image/png", png)))));
      assertEquals(sha256(png), v.get("input_reference").get("sha256").asText());
      String form =
          "prompt=x&size=32x32&num_inference_steps=2&input_reference="
              + java.net.URLEncoder.encode(dataUrl("image/png", png), StandardCharsets.UTF_8);
      completed(
          h,
          h.post(
              "/v1/videos",
              "application/x-www-form-urlencoded",
              form.getBytes(StandardCharsets.UTF_8)));
    }
  }

  @Test
  void aTi2vCardTakesAnImageOrNone() throws Exception {
    byte[] png = image("png", 8, 8, 30);
    try (Harness h = serving("pattern-ti2v", TaskType.TI2V)) {
      JsonNode text = completed(h, h.postJson("/v1/videos", json(null)));
      assertEquals("ti2v", text.get("task").asText());
      assertTrue(text.get("input_reference").isNull(), text::toString);
      JsonNode withImage = completed(h, h.postJson("/v1/videos", json(dataUrl("image/png", png))));
      assertEquals("ti2v", withImage.get("task").asText());
      assertEquals(List.of(sha256(png)), h.model.receivedImages());
    }
  }

  @Test
  void aTextToVideoJobSaysItHasNoImage() throws IOException {
    try (Harness h = new Harness(tmp.resolve("artifacts"))) {
      JsonNode v = completed(h, h.postJson("/v1/videos", json(null)));
      assertEquals("t2v", v.get("task").asText());
      assertTrue(v.get("input_reference").isNull(), v::toString);
    }
  }

  /** The refusal's message, after checking its shape and that {@code param} names the image. */
  private static String refused(Harness.Reply r) {
    assertError(r, 400, "input_reference");
    String m = r.json().get("error").get("message").asText();
    assertEquals(1, m.lines().count(), m);
    return m;
  }

  private static void assertContains(String expected, String message) {
    assertTrue(message.contains(expected), "expected '" + expected + "' in: " + message);
  }

  /** Nothing was queued, no image reached the model, no file but the job store's was written. */
  private static void nothingLeft(Harness h) throws IOException {
    assertEquals(0, h.get("/v1/videos").json().get("data").size());
    assertEquals(List.of(), h.model.receivedImages());
    Path dir = h.server.artifactDir();
    if (Files.exists(dir)) {
      try (Stream<Path> files = Files.list(dir)) {
        assertEquals(List.of(), files.filter(f -> !Harness.isStoreFile(f)).toList());
      }
    }
  }

  @Test
  void everyBadImageIsA400NamingInputReferenceAndQueuesNothing() throws Exception {
    byte[] png = image("png", 8, 8, 1);
    byte[] jpeg = image("jpg", 8, 8, 1);
    byte[] gif = image("gif", 8, 8, 1);
    String b64 = Base64.getEncoder().encodeToString(png);
    try (Harness h = serving("pattern-i2v", TaskType.I2V)) {
      // An I2V card without an image.
      assertContains(
          "model 'pattern-i2v' needs an input image, its first frame (it serves i2v): give"
              + " input_reference",
          refused(h.postJson("/v1/videos", json(null))));
      // Unreadable files.
      assertContains(
          "input_reference (file 'a.png'): not a PNG, JPEG or WebP image",
          refused(
              postMultipart(
                  h,
                  fields(
                      "x",
                      new Part(
                          "input_reference",
                          "a.png",
                          "image/png",
                          "not an image".getBytes(StandardCharsets.UTF_8))))));
      assertContains(
          "input_reference (file 'a.png'): unreadable image",
          refused(
              postMultipart(
                  h,
                  fields(
                      "x",
                      new Part(
                          "input_reference",
                          "a.png",
                          "image/png",
                          java.util.Arrays.copyOf(png, png.length / 2))))));
      assertContains(
          "input_reference (file 'a.png'): empty file",
          refused(
              postMultipart(
                  h, fields("x", new Part("input_reference", "a.png", "image/png", new byte[0])))));
      // Wrong content types: declared, by content, and a declaration the content contradicts.
      assertContains(
          "input_reference has content type 'text/plain'; send image/png, image/jpeg or image/webp",
          refused(
              postMultipart(
                  h, fields("x", new Part("input_reference", "a.txt", "text/plain", png)))));
      assertContains(
          "gif images are not accepted",
          refused(
              postMultipart(
                  h,
                  fields(
                      "x",
                      new Part("input_reference", "a.gif", "application/octet-stream", gif)))));
      assertContains(
          "input_reference (file 'a.png') is declared image/png but is a JPEG image",
          refused(
              postMultipart(
                  h, fields("x", new Part("input_reference", "a.png", "image/png", jpeg)))));
      assertContains(
          "input_reference has content type 'image/gif'",
          refused(h.postJson("/v1/videos", json(dataUrl("image/gif", gif)))));
      // Bad data URLs and references.
      assertContains(
          "input_reference URLs are not fetched (this server fetches nothing)",
          refused(h.postJson("/v1/videos", json("https://example.com/cat.png"))));
      assertContains(
          "input_reference URLs are not fetched",
          refused(h.postJson("/v1/videos", json(Map.of("image_url", "http://example.com/a.png")))));
      assertContains(
          "input_reference must be a data URL (data:image/png;base64,…) or a multipart file",
          refused(h.postJson("/v1/videos", json(b64))));
      assertContains(
          "input_reference is not a data URL: no ','",
          refused(h.postJson("/v1/videos", json("data:image/png;base64"))));
      assertContains(
          "input_reference data URL must be base64-encoded",
          refused(h.postJson("/v1/videos", json("data:image/png," + b64))));
      assertContains(
          "input_reference data URL is not valid base64",
          refused(h.postJson("/v1/videos", json("data:image/png;base64,@@@@" + b64))));
      assertContains(
          "input_reference.file_id is not supported (this server has no Files API)",
          refused(h.postJson("/v1/videos", json(Map.of("file_id", "file-123")))));
      assertContains(
          "unknown parameter 'url' of input_reference",
          refused(h.postJson("/v1/videos", json(Map.of("url", "x")))));
      assertContains(
          "input_reference.image_url is required and must be a string",
          refused(h.postJson("/v1/videos", json(Map.of("image_url", 3)))));
      assertContains(
          "input_reference must be a data URL string or an object {\"image_url\": …}",
          refused(h.postJson("/v1/videos", json(List.of("data:image/png;base64," + b64)))));
      assertContains(
          "field 'input_reference' given twice",
          refused(
              postMultipart(
                  h,
                  fields(
                      "x",
                      new Part("input_reference", "a.png", "image/png", png),
                      Part.text("input_reference", dataUrl("image/png", png))))));
      nothingLeft(h);
    }
  }

  @Test
  void anImageOverTheLimitIsA400AndABodyFarOverItA413() throws Exception {
    byte[] png = image("png", 64, 64, 7);
    ServerConfig small = ServerConfig.defaults().withMaxImageBytes(png.length - 1);
    try (Harness h = serving(small, "pattern-i2v", TaskType.I2V)) {
      String over =
          "input_reference is "
              + png.length
              + " bytes, over the server's "
              + (png.length - 1)
              + "-byte limit for an input image";
      assertContains(
          over,
          refused(
              postMultipart(
                  h, fields("x", new Part("input_reference", "big.png", "image/png", png)))));
      assertContains(over, refused(h.postJson("/v1/videos", json(dataUrl("image/png", png)))));
      byte[] huge = new byte[small.maxVideoBodyBytes() + 1];
      assertError(
          postMultipart(h, fields("x", new Part("input_reference", "huge.png", "image/png", huge))),
          413,
          null);
      nothingLeft(h);
    }
    // Exactly at the limit it is taken.
    try (Harness h =
        serving(
            ServerConfig.defaults().withMaxImageBytes(png.length), "pattern-i2v", TaskType.I2V)) {
      completed(h, h.postJson("/v1/videos", json(dataUrl("image/png", png))));
    }
  }

  @Test
  void anImageToATextOnlyCardIsRefusedNamingItsTasks() throws Exception {
    byte[] png = image("png", 8, 8, 1);
    try (Harness h = new Harness(tmp.resolve("artifacts"))) {
      String expected =
          "model 'pattern-test' takes no input image (it serves t2i, t2v); input_reference needs"
              + " an image-to-video model";
      assertEquals(expected, refused(h.postJson("/v1/videos", json(dataUrl("image/png", png)))));
      assertEquals(
          expected,
          refused(
              postMultipart(
                  h, fields("x", new Part("input_reference", "a.png", "image/png", png)))));
      nothingLeft(h);
    }
  }

  @Test
  void imageGenerationsTakeNoInputReference() throws Exception {
    byte[] png = image("png", 8, 8, 1);
    try (Harness h = serving("pattern-i2v", TaskType.I2V, TaskType.T2I)) {
      assertEquals(
          "unknown parameter 'input_reference'",
          refused(
              h.postJson(
                  "/v1/images/generations",
                  Map.of("prompt", "x", "input_reference", dataUrl("image/png", png)))));
      assertEquals(
          "file uploads are not supported (field 'input_reference')",
          refused(
              h.post(
                  "/v1/images/generations",
                  "multipart/form-data; boundary=" + BOUNDARY,
                  multipart(
                      List.of(
                          Part.text("prompt", "x"),
                          new Part("input_reference", "a.png", "image/png", png))))));
      nothingLeft(h);
    }
  }

  @Test
  void imagesFromACardThatMakesNoneAreRefusedNamingItsTasks() throws IOException {
    try (Harness h = serving("pattern-i2v", TaskType.I2V)) {
      Harness.Reply r =
          h.postJson("/v1/images/generations", Map.of("prompt", "x", "size", "32x32"));
      assertError(r, 400, null);
      assertEquals(
          "model 'pattern-i2v' does not serve task t2i (it serves i2v)",
          r.json().get("error").get("message").asText());
      nothingLeft(h);
    }
  }
}
