package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * One tiled decode. Each tile is decoded on its own (own causal cache, all frames); then, in
 * row-major order, each tile's top edge is cross-faded with the already-blended tile above and its
 * left edge with the already-blended tile to the left — the reference blends in place, so a tile's
 * blended version is what its later neighbours see — and the first {@code stride} pixels of each
 * tile are stitched together.
 */
final class TiledDecode {
  private static final int HEIGHT = 3;
  private static final int WIDTH = 4;

  private final WanVae vae;
  private final Backend backend;
  private final DecodeTiling tiling;
  private final int compression;

  TiledDecode(WanVae vae, Backend backend, DecodeTiling tiling, int compression) {
    this.vae = vae;
    this.backend = backend;
    this.tiling = tiling;
    this.compression = compression;
  }

  /** The unclamped video for {@code latents [B, z, T, H, W]}. */
  Tensor run(Tensor latents) {
    int latentHeight = latents.dim(HEIGHT);
    int latentWidth = latents.dim(WIDTH);
    int tileLatentHeight = tiling.minHeight() / compression;
    int tileLatentWidth = tiling.minWidth() / compression;
    int strideLatentHeight = tiling.strideHeight() / compression;
    int strideLatentWidth = tiling.strideWidth() / compression;
    if (strideLatentHeight == 0 || strideLatentWidth == 0) {
      throw new IllegalArgumentException(
          "tile strides must span at least one latent cell (" + compression + " pixels)");
    }
    int blendHeight = tiling.minHeight() - tiling.strideHeight();
    int blendWidth = tiling.minWidth() - tiling.strideWidth();

    List<List<Tensor>> grid = new ArrayList<>();
    for (int i = 0; i < latentHeight; i += strideLatentHeight) {
      List<Tensor> row = new ArrayList<>();
      for (int j = 0; j < latentWidth; j += strideLatentWidth) {
        Tensor tile =
            latents
                .slice(HEIGHT, i, Math.min(i + tileLatentHeight, latentHeight))
                .slice(WIDTH, j, Math.min(j + tileLatentWidth, latentWidth));
        row.add(vae.decodeUnclamped(tile));
      }
      grid.add(row);
    }

    List<Tensor> rows = new ArrayList<>();
    for (int r = 0; r < grid.size(); r++) {
      List<Tensor> row = grid.get(r);
      List<Tensor> kept = new ArrayList<>();
      for (int c = 0; c < row.size(); c++) {
        Tensor tile = row.get(c);
        if (r > 0) {
          tile = blend(grid.get(r - 1).get(c), tile, blendHeight, HEIGHT);
        }
        if (c > 0) {
          tile = blend(row.get(c - 1), tile, blendWidth, WIDTH);
        }
        row.set(c, tile);
        kept.add(crop(tile, tiling.strideHeight(), tiling.strideWidth()));
      }
      rows.add(backend.concat(kept, WIDTH));
    }
    Tensor video = backend.concat(rows, HEIGHT);
    return crop(video, latentHeight * compression, latentWidth * compression);
  }

  private static Tensor crop(Tensor x, int height, int width) {
    return x.slice(HEIGHT, 0, Math.min(height, x.dim(HEIGHT)))
        .slice(WIDTH, 0, Math.min(width, x.dim(WIDTH)));
  }

  /**
   * {@code after} with its first {@code extent} positions along {@code axis} cross-faded from the
   * last {@code extent} of {@code before}: weight {@code y/extent} on {@code after} at offset y.
   */
  private Tensor blend(Tensor before, Tensor after, int extent, int axis) {
    int n = Math.min(Math.min(before.dim(axis), after.dim(axis)), extent);
    if (n <= 0) {
      return after;
    }
    float[] fadeIn = new float[n];
    float[] fadeOut = new float[n];
    for (int y = 0; y < n; y++) {
      double w = (double) y / n;
      fadeIn[y] = (float) w;
      fadeOut[y] = (float) (1 - w);
    }
    int[] weightShape = {1, 1, 1, 1, 1};
    weightShape[axis] = n;
    Tensor in = backend.upload(Tensor.of(fadeIn, weightShape), after.dtype());
    Tensor out = backend.upload(Tensor.of(fadeOut, weightShape), after.dtype());
    int beforeLength = before.dim(axis);
    Tensor faded =
        backend.add(
            backend.mul(before.slice(axis, beforeLength - n, beforeLength), out),
            backend.mul(after.slice(axis, 0, n), in));
    return backend.concat(List.of(faded, after.slice(axis, n, after.dim(axis))), axis);
  }
}
