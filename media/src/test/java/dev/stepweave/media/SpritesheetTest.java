package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.tensor.Tensor;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The contact sheet: its layout (how many tiles, in how many columns, how far shrunk) and that each
 * tile shows the frame it should — frames of distinct flat colours, told apart after H.264.
 */
class SpritesheetTest {
  @TempDir Path tmp;

  /** Frame {@code f} of {@code frames}: a flat grey of level f / (frames - 1), tinted red by f. */
  private static Tensor flatFrames(int frames, int height, int width) {
    float[] data = new float[frames * height * width * 3];
    for (int f = 0; f < frames; f++) {
      float level = f / (float) (frames - 1);
      for (int p = 0; p < height * width; p++) {
        int i = (f * height * width + p) * 3;
        data[i] = 0.2f + 0.6f * level;
        data[i + 1] = 0.5f;
        data[i + 2] = 0.8f - 0.6f * level;
      }
    }
    return Tensor.of(data, frames, height, width, 3);
  }

  @Test
  void sixteenEvenlySpacedFramesOfALongVideoInFourRowsOfFour() throws Exception {
    int frames = 31;
    Path mp4 = tmp.resolve("long.mp4");
    Mp4Writer.write(mp4, flatFrames(frames, 48, 64), 8);
    Tensor sheet = Spritesheet.of(mp4);
    assertArrayEquals(new int[] {4 * 48, 4 * 64, 3}, sheet.shape());
    for (int k = 0; k < 16; k++) {
      int frame = (int) Math.round(k * (frames - 1) / 15.0); // 0, 2, 4, … 30
      double level = frame / (double) (frames - 1);
      double[] mean = tileMean(sheet, k / 4, k % 4, 48, 64);
      assertEquals(0.2 + 0.6 * level, mean[0], 0.03, "tile " + k + " (frame " + frame + "), red");
      assertEquals(0.8 - 0.6 * level, mean[2], 0.03, "tile " + k + " (frame " + frame + "), blue");
    }
  }

  @Test
  void aShortVideoShowsEveryFrameAndLeavesTheRestBlack() throws Exception {
    Path mp4 = tmp.resolve("short.mp4");
    Mp4Writer.write(mp4, flatFrames(5, 32, 32), 8);
    Tensor sheet = Spritesheet.of(mp4);
    // 5 tiles in rows of 3: two rows, the last with one black cell.
    assertArrayEquals(new int[] {2 * 32, 3 * 32, 3}, sheet.shape());
    assertEquals(0.2, tileMean(sheet, 0, 0, 32, 32)[0], 0.03, "frame 0");
    assertEquals(0.8, tileMean(sheet, 1, 1, 32, 32)[0], 0.03, "frame 4");
    assertArrayEquals(new double[] {0, 0, 0}, tileMean(sheet, 1, 2, 32, 32), 0.0, "empty cell");
  }

  @Test
  void wideFramesShrinkByAWholeFactorToAtMost256Pixels() throws Exception {
    Path mp4 = tmp.resolve("wide.mp4");
    Mp4Writer.write(mp4, flatFrames(2, 96, 640), 8);
    Tensor sheet = Spritesheet.of(mp4);
    // 640 wide needs a factor of 3 (213 px tiles); two tiles side by side.
    assertArrayEquals(new int[] {32, 2 * 213, 3}, sheet.shape());
    assertEquals(0.8, tileMean(sheet, 0, 1, 32, 213)[0], 0.03, "the last frame");
  }

  private static double[] tileMean(Tensor sheet, int row, int column, int h, int w) {
    float[] px = sheet.toFloatArray();
    int width = sheet.shape()[1];
    double[] sum = new double[3];
    for (int y = row * h; y < (row + 1) * h; y++) {
      for (int x = column * w; x < (column + 1) * w; x++) {
        for (int c = 0; c < 3; c++) {
          sum[c] += px[(y * width + x) * 3 + c];
        }
      }
    }
    for (int c = 0; c < 3; c++) {
      sum[c] /= (double) h * w;
    }
    return sum;
  }
}
