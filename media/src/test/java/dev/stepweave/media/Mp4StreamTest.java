package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A video coded while its chunks arrive is the very file the whole video written at once gives; a
 * stream that misses a chunk says so and writes nothing.
 */
class Mp4StreamTest {
  private static Tensor clip(int frames, int height, int width) {
    float[] rgb = new float[frames * height * width * 3];
    Random random = new Random(5);
    for (int i = 0; i < rgb.length; i++) {
      int f = i / (height * width * 3);
      int x = (i / 3) % width;
      rgb[i] =
          (float)
              Math.clamp(
                  0.4 + 0.3 * Math.sin((x + 3 * f) * 0.3) + 0.05 * random.nextGaussian(), 0, 1);
    }
    return Tensor.of(rgb, frames, height, width, 3);
  }

  @Test
  void chunksAsTheDecoderMakesThemGiveTheWholeVideosBytes(@TempDir Path dir) throws Exception {
    // 1 + 4·7 = 29 frames, as a causal VAE decodes 8 latent frames: groups of 8 span chunks.
    Tensor video = clip(29, 34, 46);
    Path whole = dir.resolve("whole.mp4");
    Mp4Writer.write(whole, video, 16, "{\"seed\":1}");
    Mp4Stream stream = new Mp4Stream();
    stream.accept(0, video.slice(0, 0, 1));
    for (int first = 1; first < 29; first += 4) {
      stream.accept(first, video.slice(0, first, first + 4));
    }
    assertTrue(stream.awaitFrames(29, Duration.ofSeconds(1)));
    Path streamed = dir.resolve("streamed.mp4");
    stream.finish(streamed, 16, "{\"seed\":1}");
    assertArrayEquals(
        Mp4Bytes.withoutTimestamps(Files.readAllBytes(whole)),
        Mp4Bytes.withoutTimestamps(Files.readAllBytes(streamed)));
  }

  @Test
  void aMissedChunkBreaksTheStreamAndWritesNothing(@TempDir Path dir) throws Exception {
    Tensor video = clip(9, 16, 16);
    Mp4Stream stream = new Mp4Stream();
    stream.accept(0, video.slice(0, 0, 1));
    stream.accept(5, video.slice(0, 5, 9)); // frames 1-4 never came
    assertTrue(stream.broken());
    assertFalse(stream.awaitFrames(9, Duration.ofMillis(10)));
    Path target = dir.resolve("never.mp4");
    assertThrows(IllegalStateException.class, () -> stream.finish(target, 16, null));
    assertFalse(Files.exists(target));
  }

  @Test
  void waitingForFramesThatDoNotComeTimesOut() throws Exception {
    Mp4Stream stream = new Mp4Stream();
    stream.accept(0, clip(4, 16, 16));
    assertFalse(stream.awaitFrames(5, Duration.ofMillis(50)), "one frame short");
    assertTrue(stream.awaitFrames(4, Duration.ofMillis(50)));
  }
}
