package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * How a decode splits every latent frame: tiles in row-major order whose outputs cover the frame
 * without overlap. An untiled decode is the grid of one tile covering the frame.
 */
final class TileGrid {
  private static final int HEIGHT = 3;
  private static final int WIDTH = 4;

  private final List<DecodeTile> tiles;
  private final int columns;

  private TileGrid(List<DecodeTile> tiles, int columns) {
    this.tiles = List.copyOf(tiles);
    this.columns = columns;
  }

  /**
   * The grid for a latent frame of {@code height × width} cells.
   *
   * @param tiling null for one tile covering the frame
   * @param compression pixels per latent cell
   * @param halo latent cells of context each tile sees beyond its output on every side
   */
  static TileGrid plan(int height, int width, DecodeTiling tiling, int compression, int halo) {
    if (tiling == null) {
      DecodeTile.Region frame = new DecodeTile.Region(0, 0, height, width);
      return new TileGrid(List.of(new DecodeTile(frame, frame)), 1);
    }
    if (tiling.tileHeight() % compression != 0 || tiling.tileWidth() % compression != 0) {
      throw new IllegalArgumentException(
          "tile size "
              + tiling.tileHeight()
              + "×"
              + tiling.tileWidth()
              + " must be a multiple of the VAE's "
              + compression
              + " pixels per latent cell");
    }
    int tileHeight = tiling.tileHeight() / compression;
    int tileWidth = tiling.tileWidth() / compression;
    List<DecodeTile> tiles = new ArrayList<>();
    int columns = 0;
    for (int top = 0; top < height; top += tileHeight) {
      columns = 0;
      for (int left = 0; left < width; left += tileWidth) {
        var output =
            new DecodeTile.Region(
                top, left, Math.min(tileHeight, height - top), Math.min(tileWidth, width - left));
        int inTop = Math.max(0, top - halo);
        int inLeft = Math.max(0, left - halo);
        int inBottom = Math.min(height, top + output.height() + halo);
        int inRight = Math.min(width, left + output.width() + halo);
        var input = new DecodeTile.Region(inTop, inLeft, inBottom - inTop, inRight - inLeft);
        tiles.add(new DecodeTile(output, input));
        columns++;
      }
    }
    return new TileGrid(tiles, columns);
  }

  List<DecodeTile> tiles() {
    return tiles;
  }

  int size() {
    return tiles.size();
  }

  /** The frame's video from its tiles' outputs, one per tile in grid order. */
  Tensor assemble(Backend backend, List<Tensor> outputs) {
    if (outputs.size() != tiles.size()) {
      throw new IllegalArgumentException(
          outputs.size() + " tile outputs for a grid of " + tiles.size() + " tiles");
    }
    if (outputs.size() == 1) {
      return outputs.getFirst();
    }
    List<Tensor> rows = new ArrayList<>();
    for (int start = 0; start < outputs.size(); start += columns) {
      rows.add(backend.concat(outputs.subList(start, start + columns), WIDTH));
    }
    return backend.concat(rows, HEIGHT);
  }
}
