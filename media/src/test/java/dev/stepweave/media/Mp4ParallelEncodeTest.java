package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Groups of pictures coded in parallel give the very file one sequential encoder writes: 61 frames
 * in several groups (one key frame every {@link Mp4Writer#KEY_FRAME_INTERVAL}), a moving pattern
 * with noise so P-frames carry motion and residuals.
 */
class Mp4ParallelEncodeTest {
  @Test
  void parallelGroupsWriteTheSequentialBytes(@TempDir Path dir) throws Exception {
    int frames = 61;
    assertTrue(frames > 2 * Mp4Writer.KEY_FRAME_INTERVAL, "at least three groups");
    int height = 48;
    int width = 64;
    float[] rgb = new float[frames * height * width * 3];
    Random random = new Random(3);
    for (int f = 0; f < frames; f++) {
      for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
          for (int c = 0; c < 3; c++) {
            double wave = Math.sin((x + 2 * f) * 0.2 + c) * Math.cos((y - f) * 0.15);
            rgb[((f * height + y) * width + x) * 3 + c] =
                (float) Math.clamp(0.5 + 0.4 * wave + 0.05 * random.nextGaussian(), 0, 1);
          }
        }
      }
    }
    Tensor video = Tensor.of(rgb, frames, height, width, 3);
    Path sequential = dir.resolve("sequential.mp4");
    Path parallel = dir.resolve("parallel.mp4");
    Mp4Writer.encode(sequential, video, 16, false);
    Mp4Writer.encode(parallel, video, 16, true);
    byte[] expected = Mp4Bytes.withoutTimestamps(Files.readAllBytes(sequential));
    assertTrue(expected.length > 1000, "a real stream was written");
    assertArrayEquals(expected, Mp4Bytes.withoutTimestamps(Files.readAllBytes(parallel)));
  }
}
