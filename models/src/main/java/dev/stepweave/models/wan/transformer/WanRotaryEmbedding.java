package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.List;

/**
 * Wan's 3-axis rotary position embedding. Each head's pairs are split into a frame band, a height
 * band and a width band; a token at grid position (f, y, x) rotates the bands by f, y and x times
 * the band's frequencies. Height and width get {@code 2·(headDim/6)} channels each, frames the
 * rest.
 */
final class WanRotaryEmbedding {
  private static final double THETA = 10000.0;

  private final int maxSeqLen;
  // Per axis (frame, height, width): angles for positions 0..maxSeqLen-1, [maxSeqLen, band/2].
  private final Tensor[] cos;
  private final Tensor[] sin;

  private WanRotaryEmbedding(int maxSeqLen, Tensor[] cos, Tensor[] sin) {
    this.maxSeqLen = maxSeqLen;
    this.cos = cos;
    this.sin = sin;
  }

  static WanRotaryEmbedding create(Backend backend, int headDim, int maxSeqLen) {
    int spatial = 2 * (headDim / 6);
    int[] bands = {headDim - 2 * spatial, spatial, spatial};
    Tensor[] cos = new Tensor[3];
    Tensor[] sin = new Tensor[3];
    for (int axis = 0; axis < 3; axis++) {
      int pairs = bands[axis] / 2;
      float[] c = new float[maxSeqLen * pairs];
      float[] s = new float[maxSeqLen * pairs];
      for (int i = 0; i < pairs; i++) {
        // Angles in double and rounded once, as the reference computes them in float64.
        double frequency = 1.0 / Math.pow(THETA, (2.0 * i) / bands[axis]);
        for (int pos = 0; pos < maxSeqLen; pos++) {
          double angle = pos * frequency;
          c[pos * pairs + i] = (float) Math.cos(angle);
          s[pos * pairs + i] = (float) Math.sin(angle);
        }
      }
      cos[axis] = backend.upload(Tensor.of(c, maxSeqLen, pairs), DType.F32);
      sin[axis] = backend.upload(Tensor.of(s, maxSeqLen, pairs), DType.F32);
    }
    return new WanRotaryEmbedding(maxSeqLen, cos, sin);
  }

  /** Tables for a {@code frames × height × width} token grid, tokens in row-major grid order. */
  RotaryTables forGrid(Backend backend, int frames, int height, int width) {
    if (frames > maxSeqLen || height > maxSeqLen || width > maxSeqLen) {
      throw new IllegalArgumentException(
          "token grid "
              + frames
              + "x"
              + height
              + "x"
              + width
              + " exceeds rope_max_seq_len "
              + maxSeqLen);
    }
    return new RotaryTables(
        gridTable(backend, cos, frames, height, width),
        gridTable(backend, sin, frames, height, width));
  }

  private static Tensor gridTable(
      Backend backend, Tensor[] perAxis, int frames, int height, int width) {
    int[] grid = {frames, height, width};
    Tensor[] bands = new Tensor[3];
    for (int axis = 0; axis < 3; axis++) {
      int pairs = perAxis[axis].dim(1);
      int[] shape = {1, 1, 1, pairs};
      shape[axis] = grid[axis];
      bands[axis] =
          perAxis[axis].slice(0, 0, grid[axis]).reshape(shape).expand(frames, height, width, pairs);
    }
    Tensor table = backend.concat(List.of(bands), 3);
    return table.reshape(frames * height * width, table.dim(3));
  }
}
