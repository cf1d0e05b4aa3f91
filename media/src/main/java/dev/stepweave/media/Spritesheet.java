package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;

/**
 * A contact sheet of a video, as OpenAI's {@code variant=spritesheet} serves one: up to {@link
 * #MAX_TILES} frames evenly spaced from the first to the last, left to right and top to bottom in
 * rows of ⌈√n⌉ tiles, each shrunk by a whole-number box filter to at most {@link #MAX_TILE_WIDTH}
 * pixels wide; cells past the last tile are black.
 *
 * <p>Frames stream through ({@link Mp4Reader#forEachFrame}): the sheet and the frame being decoded
 * are all it holds, so an 81-frame 480p video costs two frames of memory, not eighty-one.
 */
public final class Spritesheet {
  public static final int MAX_TILES = 16;
  public static final int MAX_TILE_WIDTH = 256;

  private Spritesheet() {}

  /** The sheet of the MP4 at {@code file}, {@code [H, W, 3]} F32 in [0, 1]. */
  public static Tensor of(Path file) throws IOException {
    Sheet[] sheet = new Sheet[1];
    Mp4Reader.forEachFrame(
        file,
        f -> {
          if (sheet[0] == null) {
            sheet[0] = new Sheet(f.count(), f.height(), f.width());
          }
          sheet[0].offer(f);
        });
    return sheet[0].pixels();
  }

  /** The tiles' layout, fixed by the first frame, and the pixels filled so far. */
  private static final class Sheet {
    private final int tiles;
    private final int count;
    private final int factor;
    private final int tileHeight;
    private final int tileWidth;
    private final int columns;
    private final int width;
    private final float[] rgb;
    private int next;

    Sheet(int count, int frameHeight, int frameWidth) {
      this.count = count;
      this.tiles = Math.min(count, MAX_TILES);
      this.factor = Math.ceilDiv(frameWidth, MAX_TILE_WIDTH);
      this.tileHeight = Math.max(1, frameHeight / factor);
      this.tileWidth = Math.max(1, frameWidth / factor);
      this.columns = (int) Math.ceil(Math.sqrt(tiles));
      int rows = Math.ceilDiv(tiles, columns);
      this.width = columns * tileWidth;
      this.rgb = new float[rows * tileHeight * width * 3];
    }

    /** The frame index tile {@code k} shows: evenly spaced, the first and the last included. */
    private int frameOf(int k) {
      return tiles == 1 ? 0 : (int) Math.round(k * (count - 1) / (double) (tiles - 1));
    }

    void offer(Mp4Reader.Frame f) {
      if (next >= tiles || f.index() != frameOf(next)) {
        return;
      }
      int top = (next / columns) * tileHeight;
      int left = (next % columns) * tileWidth;
      float scale = 1f / (factor * factor);
      for (int y = 0; y < tileHeight; y++) {
        for (int x = 0; x < tileWidth; x++) {
          for (int c = 0; c < 3; c++) {
            float sum = 0;
            for (int dy = 0; dy < factor; dy++) {
              int row = (y * factor + dy) * f.width();
              for (int dx = 0; dx < factor; dx++) {
                sum += f.rgb()[(row + x * factor + dx) * 3 + c];
              }
            }
            rgb[((top + y) * width + left + x) * 3 + c] = sum * scale;
          }
        }
      }
      next++;
    }

    Tensor pixels() {
      return Tensor.of(rgb, rgb.length / (width * 3), width, 3);
    }
  }
}
