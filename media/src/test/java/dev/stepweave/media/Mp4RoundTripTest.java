package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class Mp4RoundTripTest {
  @TempDir Path dir;

  @Test
  void smoothClipsKeepFramesSizeFpsAndQuality() throws IOException {
    assertRoundTrip(SyntheticClips.gradientsAndShapes(9, 64, 64), 16, 30);
    assertRoundTrip(SyntheticClips.gradientsAndShapes(17, 96, 128), 24, 35);
  }

  @Test
  void greyNoiseSurvivesAbove30Db() throws IOException {
    assertRoundTrip(SyntheticClips.greyNoise(9, 64, 64, 1), 16, 30);
    assertRoundTrip(SyntheticClips.greyNoise(13, 96, 128, 2), 16, 30);
  }

  /**
   * Per-pixel colour noise loses most of its chroma to 4:2:0 subsampling in any encoder; the codec
   * itself must add next to nothing on top of that loss.
   */
  @Test
  void colourNoiseLosesOnlyWhatSubsamplingLoses() throws IOException {
    Tensor clip = SyntheticClips.pixelNoise(9, 96, 128, 3);
    double subsamplingOnly = Psnr.between(clip, throughYuv420(clip));
    assertTrue(subsamplingOnly < 16, "4:2:0 bound " + subsamplingOnly);
    Path file = dir.resolve("noise.mp4");
    Mp4Writer.write(file, clip, 16);
    double coded = Psnr.between(clip, Mp4Reader.read(file).frames());
    assertTrue(coded > subsamplingOnly - 0.5, coded + " dB vs 4:2:0 bound " + subsamplingOnly);
  }

  @Test
  void sizesOffTheMacroblockGridAreKeptExactlyWhenEven() throws IOException {
    Path file = dir.resolve("odd-grid.mp4");
    Tensor clip = SyntheticClips.gradientsAndShapes(3, 38, 50);
    Mp4Writer.write(file, clip, 8);
    Mp4Reader.Video video = Mp4Reader.read(file);
    assertArrayEquals(new int[] {3, 38, 50, 3}, video.frames().shape());
    assertTrue(Psnr.between(clip, video.frames()) > 30);
  }

  @Test
  void oddSizesLoseTheirLastRowAndColumn() throws IOException {
    Path file = dir.resolve("odd.mp4");
    Tensor clip = SyntheticClips.gradientsAndShapes(2, 21, 33);
    Mp4Writer.write(file, clip, 8);
    Mp4Reader.Video video = Mp4Reader.read(file);
    assertArrayEquals(new int[] {2, 20, 32, 3}, video.frames().shape());
    Tensor kept = clip.slice(1, 0, 20).slice(2, 0, 32);
    assertTrue(Psnr.between(kept, video.frames()) > 30);
  }

  @Test
  void missingDirectoryIsRefusedBeforeEncodingAndLeavesNothing() {
    Path target = dir.resolve("absent").resolve("out.mp4");
    // Invalid frames too: the path must be the complaint, proving it is checked first.
    Tensor notFrames = Tensor.zeros(dev.stepweave.tensor.DType.F32, 2, 2);
    IOException e = assertThrows(IOException.class, () -> Mp4Writer.write(target, notFrames, 16));
    assertTrue(e.getMessage().contains(target.toString()), e.getMessage());
    assertFalse(e.getMessage().contains("\n"));
    assertFalse(Files.exists(target.getParent()));
  }

  @Test
  void directoryAsTargetIsRefused() throws IOException {
    Path target = Files.createDirectory(dir.resolve("taken.mp4"));
    IOException e = assertThrows(IOException.class, () -> Mp4Writer.checkWritable(target));
    assertTrue(e.getMessage().contains("is a directory"), e.getMessage());
    assertEquals(1, entries(dir));
  }

  @Test
  void nonFiniteFramesAreRefusedAndLeaveNothing() {
    Tensor clip = SyntheticClips.gradientsAndShapes(2, 16, 16);
    clip.setFloat(Float.NaN, 1, 3, 4, 0);
    Path target = dir.resolve("nan.mp4");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Mp4Writer.write(target, clip, 16));
    assertTrue(e.getMessage().startsWith("frame 1 "), e.getMessage());
    assertEquals(0, entries(dir));
  }

  @Test
  void replacingAnExistingFileWorks() throws IOException {
    Path file = dir.resolve("again.mp4");
    Files.writeString(file, "old");
    Mp4Writer.write(file, SyntheticClips.gradientsAndShapes(2, 32, 32), 16);
    assertEquals(2, Mp4Reader.read(file).frames().dim(0));
    assertEquals(1, entries(dir));
  }

  private void assertRoundTrip(Tensor clip, int fps, double minPsnr) throws IOException {
    Path file = dir.resolve("clip-" + clip.dim(1) + "x" + clip.dim(2) + ".mp4");
    Mp4Writer.write(file, clip, fps);
    Mp4Reader.Video video = Mp4Reader.read(file);
    assertArrayEquals(clip.shape(), video.frames().shape());
    assertEquals(fps, video.fps());
    double psnr = Psnr.between(clip, video.frames());
    assertTrue(psnr >= minPsnr, "PSNR " + psnr + " dB < " + minPsnr);
    try (Stream<Path> all = Files.list(dir)) {
      assertTrue(all.noneMatch(p -> p.toString().endsWith(".part")), "temporary left behind");
    }
  }

  private static Tensor throughYuv420(Tensor clip) {
    int frames = clip.dim(0);
    int height = clip.dim(1);
    int width = clip.dim(2);
    float[] out = new float[(int) clip.numel()];
    for (int f = 0; f < frames; f++) {
      float[] rgb = Bt709.toRgb(Bt709.toYuv420(RgbFrames.frame(clip, f), height, width));
      System.arraycopy(rgb, 0, out, f * rgb.length, rgb.length);
    }
    return Tensor.of(out, frames, height, width, 3);
  }

  static long entries(Path directory) {
    try (Stream<Path> all = Files.list(directory)) {
      return all.count();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
