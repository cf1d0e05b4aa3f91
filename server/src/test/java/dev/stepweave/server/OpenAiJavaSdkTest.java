package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.HttpResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.models.images.ImageGenerateParams;
import com.openai.models.images.ImagesResponse;
import com.openai.models.videos.Video;
import com.openai.models.videos.VideoCreateParams;
import com.openai.models.videos.VideoDownloadContentParams;
import com.openai.models.videos.VideoSeconds;
import com.openai.models.videos.VideoSize;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.media.Mp4Reader;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * OpenAI's own Java SDK, unmodified, against the server: a video created, polled, listed,
 * downloaded (the video, its thumbnail and its spritesheet), deleted; a model name the SDK
 * hard-codes works through an alias; an image of size auto; and a bad request reaches the SDK as
 * its typed error with the server's message.
 */
@Timeout(120)
class OpenAiJavaSdkTest {
  @TempDir static Path tmp;
  static Harness h;
  static OpenAIClient client;

  @BeforeAll
  static void start() throws Exception {
    PatternModel model = new PatternModel();
    String served = model.card().modelId();
    h =
        new Harness(
            tmp.resolve("artifacts"),
            ServerConfig.defaults(),
            new HttpConfig.Builder()
                .modelAliases(Map.of("sora-2", served, "gpt-image-1", served))
                .build(),
            Extensions.NONE,
            model);
    client =
        OpenAIOkHttpClient.builder()
            .baseUrl(h.server.baseUri() + "/v1")
            .apiKey("unused")
            .maxRetries(0)
            .build();
  }

  @AfterAll
  static void stop() {
    client.close();
    h.close();
  }

  @Test
  void aVideoIsCreatedPolledListedDownloadedAndDeleted() throws Exception {
    Video video =
        client
            .videos()
            .create(
                VideoCreateParams.builder()
                    .model("sora-2")
                    .prompt("a red fox")
                    .size(VideoSize.of("48x32"))
                    .seconds(VideoSeconds.of("1"))
                    .build());
    // Not video.validate(): the SDK's opt-in strict mode knows only the sizes and durations OpenAI
    // sells ("Unknown VideoSize: 48x32"); in its default mode, as clients run it, any size reads.
    assertEquals("48x32", video.size().toString());
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!video.status().equals(Video.Status.COMPLETED) && System.nanoTime() < deadline) {
      assertTrue(
          video.status().equals(Video.Status.QUEUED)
              || video.status().equals(Video.Status.IN_PROGRESS),
          video::toString);
      Thread.sleep(50);
      video = client.videos().retrieve(video.id());
    }
    assertEquals(Video.Status.COMPLETED, video.status(), video::toString);
    assertEquals(100, video.progress());
    String id = video.id();
    assertTrue(client.videos().list().data().stream().anyMatch(v -> v.id().equals(id)), "listed");

    byte[] mp4;
    try (HttpResponse content = client.videos().downloadContent(id)) {
      assertEquals(200, content.statusCode());
      mp4 = content.body().readAllBytes();
    }
    Path file = tmp.resolve("fox.mp4");
    Files.write(file, mp4);
    assertEquals(9, Mp4Reader.read(file).frames().dim(0), "one second at 8 fps: 9 frames");
    try (HttpResponse thumbnail =
        client
            .videos()
            .downloadContent(
                VideoDownloadContentParams.builder()
                    .videoId(id)
                    .variant(VideoDownloadContentParams.Variant.THUMBNAIL)
                    .build())) {
      assertEquals(200, thumbnail.statusCode());
      assertEquals(48, ImageIO.read(thumbnail.body()).getWidth());
    }
    try (HttpResponse sheet =
        client
            .videos()
            .downloadContent(
                VideoDownloadContentParams.builder()
                    .videoId(id)
                    .variant(VideoDownloadContentParams.Variant.SPRITESHEET)
                    .build())) {
      assertEquals(200, sheet.statusCode());
      assertEquals(3 * 48, ImageIO.read(sheet.body()).getWidth(), "9 frames, three a row");
    }

    assertTrue(client.videos().delete(id).deleted());
    assertThrows(NotFoundException.class, () -> client.videos().retrieve(id));
  }

  @Test
  void anImageOfSizeAutoComesBackAsBase64Png() throws Exception {
    ImagesResponse images =
        client
            .images()
            .generate(
                ImageGenerateParams.builder()
                    .model("gpt-image-1")
                    .prompt("a lighthouse")
                    .size(ImageGenerateParams.Size.AUTO)
                    .n(1)
                    .build());
    images.validate();
    String b64 = images.data().orElseThrow().getFirst().b64Json().orElseThrow();
    var png = ImageIO.read(new ByteArrayInputStream(Base64.getDecoder().decode(b64)));
    assertTrue(png.getWidth() > 0 && png.getHeight() > 0);
  }

  @Test
  void aBadRequestIsTheSdksTypedErrorWithTheServersMessage() {
    BadRequestException e =
        assertThrows(
            BadRequestException.class,
            () ->
                client
                    .videos()
                    .create(
                        VideoCreateParams.builder()
                            .prompt("a red fox")
                            .size(VideoSize.of("50x50"))
                            .build()));
    assertEquals(400, e.statusCode());
    assertTrue(e.getMessage().contains("size"), e.getMessage());
  }

  @Test
  void modelsAreListedAndRetrievedByAlias() {
    assertTrue(client.models().list().data().stream().anyMatch(m -> m.id().equals("sora-2")));
    assertEquals("sora-2", client.models().retrieve("sora-2").id());
  }
}
