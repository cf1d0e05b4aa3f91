package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code stepweave serve} with the tiny golden checkpoint: the playground at {@code /}, the card's
 * tasks and defaults on its model object, and {@code preview_every}'s {@code media.preview} events
 * from the Wan denoise loop (a JPEG of the latents' last frame at latent resolution).
 */
@Timeout(300)
class ServePlaygroundTest {
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;
  final HttpClient http = HttpClient.newHttpClient();

  @Test
  void servesThePageAndPreviewsOfTheLatents() throws Exception {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd)
        .parseArgs(
            "--model",
            ServeCommandTest.TINY.toString(),
            "--port",
            "0",
            "--artifacts",
            tmp.resolve("artifacts").toString());
    try (ServeCommand.Serving serving =
        cmd.start(
            new PrintWriter(new StringWriter(), true), new PrintWriter(new StringWriter(), true))) {
      String base = serving.server().baseUri().toString();
      HttpResponse<String> page = get(base + "/");
      assertEquals(200, page.statusCode());
      assertTrue(page.body().contains("<script src=\"/playground.js\""), page.body());
      String csp = page.headers().firstValue("Content-Security-Policy").orElse("");
      assertTrue(csp.startsWith("default-src 'self'"), csp);

      JsonNode model = JSON.readTree(get(base + "/v1/models").body()).at("/data/0");
      assertEquals("[\"t2i\",\"t2v\"]", model.get("tasks").toString());
      var d = serving.wan().card().defaults();
      assertEquals(d.width() + "x" + d.height(), model.at("/defaults/size").asText());
      assertEquals(d.steps(), model.at("/defaults/num_inference_steps").asInt());

      HttpResponse<String> created =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/videos"))
                  .header("Content-Type", "application/json")
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"prompt\":\"a red ball\",\"size\":\"32x32\",\"num_frames\":5,"
                              + "\"num_inference_steps\":4,\"seed\":3,\"preview_every\":2}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(200, created.statusCode(), created.body());
      String id = JSON.readTree(created.body()).get("id").asText();
      // The stream ends after the final video object: every event of the job, then the end.
      String events = get(base + "/v1/videos/" + id + "/events").body();
      assertTrue(events.contains("event: video.completed"), events);
      List<JsonNode> previews = new ArrayList<>();
      Matcher m = Pattern.compile("event: media.preview\ndata: (.+)\n").matcher(events);
      while (m.find()) {
        previews.add(JSON.readTree(m.group(1)));
      }
      assertEquals(2, previews.size(), "steps 2 and 4 of 4: " + events);
      assertEquals(List.of(2, 4), previews.stream().map(p -> p.get("step").asInt()).toList());
      for (JsonNode p : previews) {
        String url = p.get("image").asText();
        assertTrue(url.startsWith("data:image/jpeg;base64,"), url);
        BufferedImage img =
            ImageIO.read(
                new ByteArrayInputStream(
                    Base64.getDecoder().decode(url.substring(url.indexOf(',') + 1))));
        // The VAE's 8x spatial compression: a 32x32 video has 4x4 latents.
        assertEquals(4, img.getWidth());
        assertEquals(4, img.getHeight());
        assertEquals(4, p.get("width").asInt());
        assertEquals(4, p.get("height").asInt());
      }
      // Downloaded once, so the drain on close (which awaits every video's first download) ends.
      assertEquals(200, get(base + "/v1/videos/" + id + "/content").statusCode());
    }
  }

  private HttpResponse<String> get(String uri) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(uri)).build(), HttpResponse.BodyHandlers.ofString());
  }
}
