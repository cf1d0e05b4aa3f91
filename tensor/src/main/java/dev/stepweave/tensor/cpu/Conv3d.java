package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * 3-D convolution as GEMM: for one output time slice the input patches are unfolded into a {@code
 * [C·kt·kh·kw, Ho·Wo]} matrix (im2col), so memory stays bounded by one slice however long the
 * video.
 */
final class Conv3d {
  private final WorkPool pool;

  Conv3d(WorkPool pool) {
    this.pool = pool;
  }

  Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    int[] outShape = OpShapes.conv3d(x, w, bias, stride, padding);
    int batch = x.dim(0), channels = x.dim(1);
    int[] in = {x.dim(2), x.dim(3), x.dim(4)};
    int outChannels = w.dim(0);
    int[] kernel = {w.dim(2), w.dim(3), w.dim(4)};
    int[] outSize = {outShape[2], outShape[3], outShape[4]};
    MemorySegment xs = Dense.segment(x);
    MemorySegment ws = Dense.segment(w);
    Matrix perChannel = bias == null ? null : Matrix.rowVector(Dense.segment(bias));
    int to = outSize[0], ho = outSize[1], wo = outSize[2];
    int plane = ho * wo;
    int depth = channels * kernel[0] * kernel[1] * kernel[2];
    Tensor out = Dense.output(batch, outChannels, to, ho, wo);
    MemorySegment os = out.segment();
    Matrix weights = Matrix.rowMajor(ws, 0, depth);
    try (Arena arena = Arena.ofShared()) {
      MemorySegment cols = arena.allocate((long) depth * plane * Float.BYTES, 64);
      Matrix colMatrix = Matrix.rowMajor(cols, 0, plane);
      for (int b = 0; b < batch; b++) {
        for (int t = 0; t < to; t++) {
          unfold(xs, b, t, channels, in, kernel, stride, padding, ho, wo, cols);
          Matrix target =
              new Matrix(os, ((long) b * outChannels * to + t) * plane, (long) to * plane, 1);
          Gemm.multiply(pool, outChannels, plane, depth, weights, colMatrix, perChannel, target);
        }
      }
    }
    return out;
  }

  /** Writes row {@code (c, dt, dy, dx)} of the patch matrix for output time {@code t}. */
  private void unfold(
      MemorySegment xs,
      int b,
      int t,
      int channels,
      int[] in,
      int[] kernel,
      int[] stride,
      int[] padding,
      int ho,
      int wo,
      MemorySegment cols) {
    int kt = kernel[0], kh = kernel[1], kw = kernel[2];
    int plane = ho * wo;
    pool.run(
        channels * kt,
        task -> {
          int c = task / kt;
          int dt = task % kt;
          int ti = t * stride[0] - padding[0] + dt;
          for (int dy = 0; dy < kh; dy++) {
            for (int dx = 0; dx < kw; dx++) {
              long row = (((long) task * kh + dy) * kw + dx) * plane;
              for (int y = 0; y < ho; y++) {
                int yi = y * stride[1] - padding[1] + dy;
                for (int xo = 0; xo < wo; xo++) {
                  int xi = xo * stride[2] - padding[2] + dx;
                  boolean inside =
                      ti >= 0 && ti < in[0] && yi >= 0 && yi < in[1] && xi >= 0 && xi < in[2];
                  float v =
                      inside
                          ? Dense.get(
                              xs,
                              ((((long) b * channels + c) * in[0] + ti) * in[1] + yi) * in[2] + xi)
                          : 0f;
                  Dense.set(cols, row + (long) y * wo + xo, v);
                }
              }
            }
          }
        });
  }
}
