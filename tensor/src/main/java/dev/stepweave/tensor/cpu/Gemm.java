package dev.stepweave.tensor.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code C = A·B (+ bias)} in F32: both operands are packed once per call into zero-padded panels,
 * then a register-tiled micro-kernel runs over cache-sized blocks of C.
 *
 * <p>Every output element is one fused multiply-add chain over k in ascending order, started from
 * zero, with the bias added last. Blocking only pauses that chain (storing the float partial sum
 * and reloading it), never splits or reorders it, and rows never share arithmetic: edge tiles run
 * the same kernel on zero padding, whose products are discarded. So a row's result is independent
 * of how many rows are computed with it or where it sits (batch invariance), and equal bit for bit
 * to the scalar loop {@code acc = fma(a[r,p], b[p,c], acc)}.
 */
final class Gemm {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  /** Micro-tile: MR rows by NR = 2 vectors of columns, 16 accumulators with 512-bit vectors. */
  private static final int MR = 8;

  private static final int NR = 2 * L;

  /** Depth of one block: a B panel of KC×NR stays in L1 while the A panels stream past it. */
  private static final int KC = Integer.getInteger("kc", 256);

  /** Rows per task: an A block of MC×KC stays in L2. */
  private static final int MC = Integer.getInteger("mc", 128);

  /** Column panels per task: the task's C block of MC×(NC_PANELS·NR) stays in L2. */
  private static final int NC_PANELS = Integer.getInteger("ncp", 8);

  private Gemm() {}

  /**
   * @param a {@code [m, k]}
   * @param b {@code [k, n]}
   * @param bias {@code [m, n]}, usually a broadcast view of a vector, or null
   * @param c {@code [m, n]} output with unit column stride, overwritten
   */
  static void multiply(
      WorkPool pool, int m, int n, int k, Matrix a, Matrix b, Matrix bias, Matrix c) {
    if (c.colStride() != 1) {
      throw new IllegalArgumentException("GEMM output needs unit column stride");
    }
    if (m == 0 || n == 0) {
      return;
    }
    int rowPanels = (m + MR - 1) / MR;
    int colPanels = (n + NR - 1) / NR;
    // A's rows and B's columns are both "lines" swept along k.
    float[] packedA = Panels.pack(pool, a.lines(), m, k, MR);
    float[] packedB = Panels.pack(pool, b.transposed().lines(), n, k, NR);
    int mBlocks = (m + MC - 1) / MC;
    int nBlocks = (colPanels + NC_PANELS - 1) / NC_PANELS;
    pool.run(
        mBlocks * nBlocks,
        task -> {
          int rp0 = (task / nBlocks) * (MC / MR);
          int rp1 = Math.min(rowPanels, rp0 + MC / MR);
          int cp0 = (task % nBlocks) * NC_PANELS;
          int cp1 = Math.min(colPanels, cp0 + NC_PANELS);
          int ldc = (cp1 - cp0) * NR;
          float[] block = new float[(rp1 - rp0) * MR * ldc];
          for (int k0 = 0; k0 < k; k0 += KC) {
            int kc = Math.min(KC, k - k0);
            for (int cp = cp0; cp < cp1; cp++) {
              int bOff = (cp * k + k0) * NR;
              for (int rp = rp0; rp < rp1; rp++) {
                kernel(
                    kc,
                    packedA,
                    (rp * k + k0) * MR,
                    packedB,
                    bOff,
                    block,
                    (rp - rp0) * MR * ldc + (cp - cp0) * NR,
                    ldc);
              }
            }
          }
          store(
              block,
              ldc,
              c,
              bias,
              rp0 * MR,
              Math.min(m, rp1 * MR),
              cp0 * NR,
              Math.min(n, cp1 * NR));
        });
  }

  /**
   * Continues the MR×NR partial sums at {@code c[cOff]} (row stride {@code ldc}) by an MR×kc A
   * panel times a kc×NR B panel. Full tiles only, so the accumulators stay in registers.
   */
  private static void kernel(
      int kc, float[] ap, int aOff, float[] bp, int bOff, float[] c, int cOff, int ldc) {
    FloatVector c00 = FloatVector.fromArray(S, c, cOff);
    FloatVector c01 = FloatVector.fromArray(S, c, cOff + L);
    FloatVector c10 = FloatVector.fromArray(S, c, cOff + ldc);
    FloatVector c11 = FloatVector.fromArray(S, c, cOff + ldc + L);
    FloatVector c20 = FloatVector.fromArray(S, c, cOff + 2 * ldc);
    FloatVector c21 = FloatVector.fromArray(S, c, cOff + 2 * ldc + L);
    FloatVector c30 = FloatVector.fromArray(S, c, cOff + 3 * ldc);
    FloatVector c31 = FloatVector.fromArray(S, c, cOff + 3 * ldc + L);
    FloatVector c40 = FloatVector.fromArray(S, c, cOff + 4 * ldc);
    FloatVector c41 = FloatVector.fromArray(S, c, cOff + 4 * ldc + L);
    FloatVector c50 = FloatVector.fromArray(S, c, cOff + 5 * ldc);
    FloatVector c51 = FloatVector.fromArray(S, c, cOff + 5 * ldc + L);
    FloatVector c60 = FloatVector.fromArray(S, c, cOff + 6 * ldc);
    FloatVector c61 = FloatVector.fromArray(S, c, cOff + 6 * ldc + L);
    FloatVector c70 = FloatVector.fromArray(S, c, cOff + 7 * ldc);
    FloatVector c71 = FloatVector.fromArray(S, c, cOff + 7 * ldc + L);
    for (int q = 0; q < kc; q++) {
      int bi = bOff + q * NR;
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aOff + q * MR;
      FloatVector x = FloatVector.broadcast(S, ap[ai]);
      c00 = x.fma(b0, c00);
      c01 = x.fma(b1, c01);
      x = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = x.fma(b0, c10);
      c11 = x.fma(b1, c11);
      x = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = x.fma(b0, c20);
      c21 = x.fma(b1, c21);
      x = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = x.fma(b0, c30);
      c31 = x.fma(b1, c31);
      x = FloatVector.broadcast(S, ap[ai + 4]);
      c40 = x.fma(b0, c40);
      c41 = x.fma(b1, c41);
      x = FloatVector.broadcast(S, ap[ai + 5]);
      c50 = x.fma(b0, c50);
      c51 = x.fma(b1, c51);
      x = FloatVector.broadcast(S, ap[ai + 6]);
      c60 = x.fma(b0, c60);
      c61 = x.fma(b1, c61);
      x = FloatVector.broadcast(S, ap[ai + 7]);
      c70 = x.fma(b0, c70);
      c71 = x.fma(b1, c71);
    }
    c00.intoArray(c, cOff);
    c01.intoArray(c, cOff + L);
    c10.intoArray(c, cOff + ldc);
    c11.intoArray(c, cOff + ldc + L);
    c20.intoArray(c, cOff + 2 * ldc);
    c21.intoArray(c, cOff + 2 * ldc + L);
    c30.intoArray(c, cOff + 3 * ldc);
    c31.intoArray(c, cOff + 3 * ldc + L);
    c40.intoArray(c, cOff + 4 * ldc);
    c41.intoArray(c, cOff + 4 * ldc + L);
    c50.intoArray(c, cOff + 5 * ldc);
    c51.intoArray(c, cOff + 5 * ldc + L);
    c60.intoArray(c, cOff + 6 * ldc);
    c61.intoArray(c, cOff + 6 * ldc + L);
    c70.intoArray(c, cOff + 7 * ldc);
    c71.intoArray(c, cOff + 7 * ldc + L);
  }

  /**
   * Copies rows {@code [r0, r1)} × columns {@code [c0, c1)} of a finished block into C, plus bias.
   */
  private static void store(
      float[] block, int ldc, Matrix c, Matrix bias, int r0, int r1, int c0, int c1) {
    for (int r = r0; r < r1; r++) {
      int row = (r - r0) * ldc;
      if (bias != null) {
        for (int j = c0; j < c1; j++) {
          block[row + j - c0] += bias.get(r, j);
        }
      }
      c.setRow(r, c0, block, row, c1 - c0);
    }
  }
}
