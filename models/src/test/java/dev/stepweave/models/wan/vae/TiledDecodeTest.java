package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Tiled decoding against an oracle that follows the reference's procedure literally: tiles decoded
 * on their own, then blended in place row by row and column by column with scalar loops, cropped to
 * the stride and stitched. (Tiling is an approximation of {@link WanVae#decode}: near seams it
 * differs from the untiled result by design, so the untiled decode is not the oracle.)
 */
class TiledDecodeTest {
  private static final float TOLERANCE = 5e-4f;
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  private static Backend backend;
  private static SafetensorsFile weightsFile;
  private static WanVae vae;
  private static Tensor z;

  @BeforeAll
  static void load() {
    backend = new CpuBackend(2);
    Path dir = GOLDEN.resolve("wan21-tiny/vae");
    weightsFile = SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
    vae =
        WanVae.load(
            WanVaeConfig.read(dir.resolve("config.json")),
            new Weights(weightsFile, backend, DType.F32));
    try (SafetensorsFile expected =
        SafetensorsFile.open(GOLDEN.resolve("wan21-tiny-expected/vae.safetensors"))) {
      z = backend.upload(expected.load("z"), DType.F32);
    }
  }

  @AfterAll
  static void close() {
    weightsFile.close();
  }

  @Test
  void smallSquareTilesBlendAsTheReferenceDoes() {
    assertMatchesOracle(new DecodeTiling(16, 16, 8, 8));
  }

  @Test
  void unevenTilesWithPartialLastTilesBlendAsTheReferenceDoes() {
    assertMatchesOracle(new DecodeTiling(24, 16, 16, 8));
  }

  private static void assertMatchesOracle(DecodeTiling tiling) {
    Grid want = oracle(tiling, vae.config().spatialCompression());
    Tensor got = backend.download(vae.decodeTiled(z, tiling));
    assertArrayEquals(want.shape, got.shape());
    float[] g = got.toFloatArray();
    float worst = 0f;
    for (int i = 0; i < g.length; i++) {
      worst = Math.max(worst, Math.abs(want.data[i] - g[i]));
    }
    assertTrue(worst <= TOLERANCE, "tiled decode: max abs error " + worst);
  }

  private static Grid oracle(DecodeTiling tiling, int compression) {
    int height = z.dim(3);
    int width = z.dim(4);
    int tileH = tiling.minHeight() / compression;
    int tileW = tiling.minWidth() / compression;
    int strideH = tiling.strideHeight() / compression;
    int strideW = tiling.strideWidth() / compression;
    List<List<Grid>> rows = new ArrayList<>();
    for (int i = 0; i < height; i += strideH) {
      List<Grid> row = new ArrayList<>();
      for (int j = 0; j < width; j += strideW) {
        Tensor tile =
            z.slice(3, i, Math.min(i + tileH, height)).slice(4, j, Math.min(j + tileW, width));
        row.add(new Grid(backend.download(vae.decodeUnclamped(tile))));
      }
      rows.add(row);
    }
    int outH = height * compression;
    int outW = width * compression;
    int[] s = rows.get(0).get(0).shape;
    Grid out = new Grid(new int[] {s[0], s[1], s[2], outH, outW});
    int top = 0;
    for (int r = 0; r < rows.size(); r++) {
      int left = 0;
      int keptH = 0;
      for (int c = 0; c < rows.get(r).size(); c++) {
        Grid tile = rows.get(r).get(c);
        if (r > 0) {
          blendRows(rows.get(r - 1).get(c), tile, tiling.minHeight() - tiling.strideHeight());
        }
        if (c > 0) {
          blendColumns(rows.get(r).get(c - 1), tile, tiling.minWidth() - tiling.strideWidth());
        }
        keptH = Math.min(tiling.strideHeight(), tile.shape[3]);
        int keptW = Math.min(tiling.strideWidth(), tile.shape[4]);
        for (int y = 0; y < keptH && top + y < outH; y++) {
          for (int x = 0; x < keptW && left + x < outW; x++) {
            for (int p = 0; p < tile.planes(); p++) {
              out.set(p, top + y, left + x, tile.get(p, y, x));
            }
          }
        }
        left += keptW;
      }
      top += keptH;
    }
    for (int i = 0; i < out.data.length; i++) {
      out.data[i] = Math.clamp(out.data[i], -1f, 1f);
    }
    return out;
  }

  private static void blendRows(Grid a, Grid b, int extent) {
    int n = Math.min(Math.min(a.shape[3], b.shape[3]), extent);
    for (int y = 0; y < n; y++) {
      float wb = (float) ((double) y / n);
      float wa = (float) (1 - (double) y / n);
      for (int p = 0; p < b.planes(); p++) {
        for (int x = 0; x < b.shape[4]; x++) {
          b.set(p, y, x, a.get(p, a.shape[3] - n + y, x) * wa + b.get(p, y, x) * wb);
        }
      }
    }
  }

  private static void blendColumns(Grid a, Grid b, int extent) {
    int n = Math.min(Math.min(a.shape[4], b.shape[4]), extent);
    for (int x = 0; x < n; x++) {
      float wb = (float) ((double) x / n);
      float wa = (float) (1 - (double) x / n);
      for (int p = 0; p < b.planes(); p++) {
        for (int y = 0; y < b.shape[3]; y++) {
          b.set(p, y, x, a.get(p, y, a.shape[4] - n + x) * wa + b.get(p, y, x) * wb);
        }
      }
    }
  }

  /** A mutable host copy of a {@code [B, C, T, H, W]} tensor; a "plane" is one (b, c, t). */
  private static final class Grid {
    final int[] shape;
    final float[] data;

    Grid(Tensor t) {
      this.shape = t.shape();
      this.data = t.toFloatArray();
    }

    Grid(int[] shape) {
      this.shape = shape;
      this.data = new float[(int) Tensor.numel(shape)];
    }

    int planes() {
      return shape[0] * shape[1] * shape[2];
    }

    float get(int plane, int y, int x) {
      return data[(plane * shape[3] + y) * shape[4] + x];
    }

    void set(int plane, int y, int x, float v) {
      data[(plane * shape[3] + y) * shape[4] + x] = v;
    }
  }
}
