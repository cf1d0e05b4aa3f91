package dev.stepweave.tensor.cpu;

import java.lang.foreign.MemorySegment;

/**
 * A strided 2-D window of F32 host memory: element {@code (r, c)} lives at index {@code offset + r
 * * rowStride + c * colStride}. Lets GEMM read transposed and broadcast operands without copies.
 */
record Matrix(MemorySegment segment, long offset, long rowStride, long colStride) {

  static Matrix rowMajor(MemorySegment segment, long offset, int cols) {
    return new Matrix(segment, offset, cols, 1);
  }

  /** A vector broadcast along rows: element {@code (r, c)} is {@code v[c]}. */
  static Matrix columnVector(MemorySegment v) {
    return new Matrix(v, 0, 0, 1);
  }

  /** A vector broadcast along columns: element {@code (r, c)} is {@code v[r]}. */
  static Matrix rowVector(MemorySegment v) {
    return new Matrix(v, 0, 1, 0);
  }

  Matrix transposed() {
    return new Matrix(segment, offset, colStride, rowStride);
  }

  /** The rows of this matrix as lines swept along its columns (the packing view). */
  Panels.Lines lines() {
    return new Panels.Lines(segment, offset, rowStride, colStride);
  }

  float get(int r, int c) {
    return Dense.get(segment, offset + r * rowStride + c * colStride);
  }

  /**
   * Writes {@code count} values from {@code src[from]} into row {@code r} from column {@code c}.
   */
  void setRow(int r, int c, float[] src, int from, int count) {
    if (colStride != 1) {
      throw new IllegalStateException("setRow needs unit column stride");
    }
    MemorySegment.copy(
        src, from, segment, Dense.FLOAT, (offset + r * rowStride + c) * Float.BYTES, count);
  }
}
