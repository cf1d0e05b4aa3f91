package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.media.Mp4Reader;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Where OpenAI's clients reach: model retrieval, aliases, thumbnails, images of size auto. */
@Timeout(60)
class CompatibilityTest {
  @TempDir static Path tmp;
  static Harness h;
  static String served;

  @BeforeAll
  static void start() throws Exception {
    PatternModel model = new PatternModel();
    served = model.card().modelId();
    h =
        new Harness(
            tmp.resolve("artifacts"),
            ServerConfig.defaults(),
            new HttpConfig.Builder()
                .modelAliases(Map.of("sora-2", served, "dall-e-3", served))
                .build(),
            Extensions.NONE,
            model);
  }

  @AfterAll
  static void stop() {
    h.close();
  }

  @Test
  void modelsAreRetrievableByIdAndAlias() {
    JsonNode m = h.get("/v1/models/" + served).json();
    assertEquals(served, m.get("id").asText());
    assertEquals("model", m.get("object").asText());
    assertEquals("stepweave", m.get("owned_by").asText());
    JsonNode alias = h.get("/v1/models/sora-2").json();
    assertEquals("sora-2", alias.get("id").asText());
    assertEquals(served, alias.get("alias_of").asText());
    JsonNode list = h.get("/v1/models").json().get("data");
    assertEquals(3, list.size());
    assertEquals(served, list.get(0).get("id").asText());
    assertEquals("dall-e-3", list.get(1).get("id").asText());
    assertEquals("sora-2", list.get(2).get("id").asText());
    Harness.Reply unknown = h.get("/v1/models/gpt-4");
    assertEquals(404, unknown.status());
    assertEquals("model_not_found", unknown.json().get("error").get("code").asText());
    assertEquals(
        "model 'gpt-4' is not served here (this server serves '" + served + "')",
        unknown.json().get("error").get("message").asText());
    assertEquals(405, h.delete("/v1/models/" + served).status());
  }

  @Test
  void aliasesWorkAsTheModelField() {
    String id =
        h.createVideo(
            Map.of("prompt", "an alias", "model", "sora-2", "size", "16x16", "num_frames", 1));
    assertEquals("completed", h.awaitTerminal(id).get("status").asText());
    Harness.Reply other =
        h.postJson("/v1/videos", Map.of("prompt", "x", "model", "sora-1", "size", "16x16"));
    assertEquals(404, other.status());
    assertEquals("model_not_found", other.json().get("error").get("code").asText());
  }

  @Test
  void anAliasForAnotherCardStopsTheStart() throws Exception {
    try (Engine engine = new Engine(new PatternModel(), EngineConfig.defaults(), Extensions.NONE)) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  StepweaveServer.start(
                      "127.0.0.1",
                      0,
                      engine,
                      ServerConfig.defaults(),
                      new HttpConfig.Builder()
                          .modelAliases(Map.of("sora-2", "wan22-a14b"))
                          .build()));
      assertEquals(
          "model alias sora-2=wan22-a14b: this server serves '" + served + "', not 'wan22-a14b'",
          e.getMessage());
    }
  }

  @Test
  void theThumbnailIsAJpegOfTheMiddleFrame() throws Exception {
    String id =
        h.createVideo(
            Map.of("prompt", "a thumbnail", "size", "48x32", "num_frames", 9, "seed", 11));
    assertEquals("completed", h.awaitTerminal(id).get("status").asText());
    Harness.Reply thumb = h.get("/v1/videos/" + id + "/content?variant=thumbnail");
    assertEquals(200, thumb.status(), thumb::text);
    assertEquals("image/jpeg", thumb.contentType());
    BufferedImage jpeg = ImageIO.read(new ByteArrayInputStream(thumb.body()));
    assertEquals(48, jpeg.getWidth());
    assertEquals(32, jpeg.getHeight());

    Path mp4 = tmp.resolve("whole.mp4");
    Files.write(mp4, h.get("/v1/videos/" + id + "/content").body());
    float[] frames = Mp4Reader.read(mp4).frames().toFloatArray();
    int frameSize = 48 * 32 * 3;
    // Each frame of the pattern model differs; the JPEG is nearest the middle one (index 4).
    double best = Double.MAX_VALUE;
    int bestFrame = -1;
    for (int f = 0; f < 9; f++) {
      double err = meanAbs(jpeg, frames, f * frameSize);
      if (err < best) {
        best = err;
        bestFrame = f;
      }
    }
    assertEquals(4, bestFrame, "nearest frame");
    assertTrue(best < 0.03, "mean |jpeg - frame 4| = " + best);

    Harness.Reply head =
        h.send(
            HttpRequest.newBuilder(h.uri("/v1/videos/" + id + "/content?variant=thumbnail"))
                .HEAD());
    assertEquals(200, head.status());
    assertEquals(0, head.body().length);
    Harness.Reply bad = h.get("/v1/videos/" + id + "/content?variant=poster");
    assertEquals(400, bad.status());
    assertEquals("variant", bad.json().at("/error/param").asText());
    assertEquals(
        "variant must be video, thumbnail or spritesheet, got 'poster'",
        bad.json().get("error").get("message").asText());
  }

  @Test
  void theSpritesheetIsAJpegOfEveryFrameOfAShortVideoInRowsOfThree() throws Exception {
    String id =
        h.createVideo(
            Map.of("prompt", "a spritesheet", "size", "48x32", "num_frames", 9, "seed", 12));
    assertEquals("completed", h.awaitTerminal(id).get("status").asText());
    Harness.Reply sheet = h.get("/v1/videos/" + id + "/content?variant=spritesheet");
    assertEquals(200, sheet.status(), sheet::text);
    assertEquals("image/jpeg", sheet.contentType());
    BufferedImage jpeg = ImageIO.read(new ByteArrayInputStream(sheet.body()));
    assertEquals(3 * 48, jpeg.getWidth(), "9 frames: three tiles a row");
    assertEquals(3 * 32, jpeg.getHeight());

    Path mp4 = tmp.resolve("sheet.mp4");
    Files.write(mp4, h.get("/v1/videos/" + id + "/content").body());
    float[] frames = Mp4Reader.read(mp4).frames().toFloatArray();
    int frameSize = 48 * 32 * 3;
    for (int k = 0; k < 9; k++) {
      BufferedImage tile = jpeg.getSubimage((k % 3) * 48, (k / 3) * 32, 48, 32);
      int nearest = -1;
      double best = Double.MAX_VALUE;
      for (int f = 0; f < 9; f++) {
        double err = meanAbs(tile, frames, f * frameSize);
        if (err < best) {
          best = err;
          nearest = f;
        }
      }
      assertEquals(k, nearest, "tile " + k + " shows frame " + k);
    }
  }

  private static double meanAbs(BufferedImage img, float[] frames, int offset) {
    double sum = 0;
    for (int y = 0; y < img.getHeight(); y++) {
      for (int x = 0; x < img.getWidth(); x++) {
        int rgb = img.getRGB(x, y);
        int i = offset + (y * img.getWidth() + x) * 3;
        sum += Math.abs(((rgb >> 16) & 255) / 255.0 - frames[i]);
        sum += Math.abs(((rgb >> 8) & 255) / 255.0 - frames[i + 1]);
        sum += Math.abs((rgb & 255) / 255.0 - frames[i + 2]);
      }
    }
    return sum / (img.getWidth() * img.getHeight() * 3.0);
  }

  @Test
  void imagesOfSizeAutoTakeTheCardsDefault() throws Exception {
    Harness.Reply r =
        h.postJson(
            "/v1/images/generations",
            Map.of(
                "prompt", "auto", "size", "auto", "num_inference_steps", 1, "model", "dall-e-3"));
    assertEquals(200, r.status(), r::text);
    BufferedImage img =
        ImageIO.read(
            new ByteArrayInputStream(
                java.util.Base64.getDecoder().decode(r.json().at("/data/0/b64_json").asText())));
    var d = h.model.card().defaults();
    assertEquals(d.width(), img.getWidth());
    assertEquals(d.height(), img.getHeight());
  }
}
