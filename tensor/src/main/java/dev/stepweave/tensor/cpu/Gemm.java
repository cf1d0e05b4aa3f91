package dev.stepweave.tensor.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code C = A·B (+ bias)} in F32, cache-blocked with packed panels and a register-tiled
 * micro-kernel.
 *
 * <p>Every output element is one fused multiply-add chain over k in ascending order, started from
 * zero, with the bias added last. Blocking only pauses that chain (storing the float partial sum
 * and reloading it), never splits or reorders it, and rows never share arithmetic. So a row's
 * result is independent of how many rows are computed with it or where it sits (batch invariance),
 * and equal bit for bit to the scalar loop {@code acc = fma(a[r,p], b[p,c], acc)}.
 */
final class Gemm {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  /** Micro-tile: MR rows by NR = 2 vectors of columns, 16 accumulators with 512-bit vectors. */
  private static final int MR = 8;

  private static final int NR = 2 * L;

  /** Depth of one packed block: a B panel of KC×NR stays in L1 while it is reused. */
  private static final int KC = 256;

  /** Rows per task: an A block of MC×KC stays in L2. */
  private static final int MC = 128;

  /** Column panels per task. */
  private static final int NC_PANELS = 8;

  private static final ByteOrder ORDER = ByteOrder.nativeOrder();

  private Gemm() {}

  /**
   * @param a {@code [m, k]}
   * @param b {@code [k, n]}
   * @param bias {@code [m, n]}, usually a broadcast view of a vector, or null
   * @param c {@code [m, n]} zero-filled output with unit column stride
   */
  static void multiply(
      WorkPool pool, int m, int n, int k, Matrix a, Matrix b, Matrix bias, Matrix c) {
    if (c.colStride() != 1) {
      throw new IllegalArgumentException("GEMM output needs unit column stride");
    }
    if (m == 0 || n == 0) {
      return;
    }
    int panels = (n + NR - 1) / NR;
    float[] packedB = packB(pool, b, k, n, panels);
    int mBlocks = (m + MC - 1) / MC;
    int nBlocks = (panels + NC_PANELS - 1) / NC_PANELS;
    pool.run(
        mBlocks * nBlocks,
        task -> {
          int m0 = (task / nBlocks) * MC;
          int mc = Math.min(MC, m - m0);
          int p0 = (task % nBlocks) * NC_PANELS;
          int p1 = Math.min(panels, p0 + NC_PANELS);
          int rowPanels = (mc + MR - 1) / MR;
          float[] packedA = new float[rowPanels * MR * Math.min(KC, Math.max(k, 1))];
          for (int k0 = 0; k0 < k; k0 += KC) {
            int kc = Math.min(KC, k - k0);
            packA(a, m0, mc, k0, kc, packedA);
            for (int p = p0; p < p1; p++) {
              int col = p * NR;
              int cols = Math.min(NR, n - col);
              for (int rp = 0; rp < rowPanels; rp++) {
                int rows = Math.min(MR, mc - rp * MR);
                kernel(
                    kc,
                    packedA,
                    rp * kc * MR,
                    packedB,
                    ((long) p * k + k0) * NR,
                    c,
                    m0 + rp * MR,
                    rows,
                    col,
                    cols);
              }
            }
          }
          if (bias != null) {
            addBias(bias, c, m0, mc, p0 * NR, Math.min(n, p1 * NR));
          }
        });
  }

  /** Packs B into column panels {@code [panel][k][NR]}, zero-padding the last panel. */
  private static float[] packB(WorkPool pool, Matrix b, int k, int n, int panels) {
    float[] packed = new float[Math.multiplyExact(panels * NR, Math.max(k, 1))];
    pool.run(
        panels,
        p -> {
          int cols = Math.min(NR, n - p * NR);
          long base = (long) p * k * NR;
          for (int j = 0; j < cols; j++) {
            for (int q = 0; q < k; q++) {
              packed[(int) (base + (long) q * NR + j)] = b.get(q, p * NR + j);
            }
          }
        });
    return packed;
  }

  /** Packs rows {@code [m0, m0+mc)} × depth {@code [k0, k0+kc)} of A as {@code [panel][kc][MR]}. */
  private static void packA(Matrix a, int m0, int mc, int k0, int kc, float[] packed) {
    int rowPanels = (mc + MR - 1) / MR;
    for (int rp = 0; rp < rowPanels; rp++) {
      int base = rp * kc * MR;
      for (int i = 0; i < MR; i++) {
        int r = rp * MR + i;
        if (r >= mc) {
          for (int q = 0; q < kc; q++) {
            packed[base + q * MR + i] = 0f;
          }
          continue;
        }
        for (int q = 0; q < kc; q++) {
          packed[base + q * MR + i] = a.get(m0 + r, k0 + q);
        }
      }
    }
  }

  /**
   * Multiplies an MR×kc A panel by a kc×NR B panel into C rows {@code [row, row+rows)}, columns
   * {@code [col, col+cols)}, continuing the partial sums held in C (which starts zero-filled). Rows
   * past {@code rows} and columns past {@code cols} are masked off rather than branched around, so
   * the accumulators stay in registers.
   */
  private static void kernel(
      int kc,
      float[] ap,
      int aOff,
      float[] bp,
      long bOffset,
      Matrix c,
      int row,
      int rows,
      int col,
      int cols) {
    int bOff = (int) bOffset;
    MemorySegment cs = c.segment();
    long stride = c.rowStride() * Float.BYTES;
    long c0 = (c.offset() + row * c.rowStride() + col) * Float.BYTES;
    VectorMask<Float> lo = S.indexInRange(0, cols);
    VectorMask<Float> hi = S.indexInRange(L, cols);
    VectorMask<Float> none = S.maskAll(false);
    VectorMask<Float> l0 = rows > 0 ? lo : none;
    VectorMask<Float> h0 = rows > 0 ? hi : none;
    FloatVector a00 = FloatVector.fromMemorySegment(S, cs, c0, ORDER, l0);
    FloatVector a01 = FloatVector.fromMemorySegment(S, cs, c0 + L * 4L, ORDER, h0);
    VectorMask<Float> l1 = rows > 1 ? lo : none;
    VectorMask<Float> h1 = rows > 1 ? hi : none;
    FloatVector a10 = FloatVector.fromMemorySegment(S, cs, c0 + stride, ORDER, l1);
    FloatVector a11 = FloatVector.fromMemorySegment(S, cs, c0 + stride + L * 4L, ORDER, h1);
    VectorMask<Float> l2 = rows > 2 ? lo : none;
    VectorMask<Float> h2 = rows > 2 ? hi : none;
    FloatVector a20 = FloatVector.fromMemorySegment(S, cs, c0 + 2 * stride, ORDER, l2);
    FloatVector a21 = FloatVector.fromMemorySegment(S, cs, c0 + 2 * stride + L * 4L, ORDER, h2);
    VectorMask<Float> l3 = rows > 3 ? lo : none;
    VectorMask<Float> h3 = rows > 3 ? hi : none;
    FloatVector a30 = FloatVector.fromMemorySegment(S, cs, c0 + 3 * stride, ORDER, l3);
    FloatVector a31 = FloatVector.fromMemorySegment(S, cs, c0 + 3 * stride + L * 4L, ORDER, h3);
    VectorMask<Float> l4 = rows > 4 ? lo : none;
    VectorMask<Float> h4 = rows > 4 ? hi : none;
    FloatVector a40 = FloatVector.fromMemorySegment(S, cs, c0 + 4 * stride, ORDER, l4);
    FloatVector a41 = FloatVector.fromMemorySegment(S, cs, c0 + 4 * stride + L * 4L, ORDER, h4);
    VectorMask<Float> l5 = rows > 5 ? lo : none;
    VectorMask<Float> h5 = rows > 5 ? hi : none;
    FloatVector a50 = FloatVector.fromMemorySegment(S, cs, c0 + 5 * stride, ORDER, l5);
    FloatVector a51 = FloatVector.fromMemorySegment(S, cs, c0 + 5 * stride + L * 4L, ORDER, h5);
    VectorMask<Float> l6 = rows > 6 ? lo : none;
    VectorMask<Float> h6 = rows > 6 ? hi : none;
    FloatVector a60 = FloatVector.fromMemorySegment(S, cs, c0 + 6 * stride, ORDER, l6);
    FloatVector a61 = FloatVector.fromMemorySegment(S, cs, c0 + 6 * stride + L * 4L, ORDER, h6);
    VectorMask<Float> l7 = rows > 7 ? lo : none;
    VectorMask<Float> h7 = rows > 7 ? hi : none;
    FloatVector a70 = FloatVector.fromMemorySegment(S, cs, c0 + 7 * stride, ORDER, l7);
    FloatVector a71 = FloatVector.fromMemorySegment(S, cs, c0 + 7 * stride + L * 4L, ORDER, h7);
    for (int q = 0; q < kc; q++) {
      int bi = bOff + q * NR;
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aOff + q * MR;
      FloatVector x = FloatVector.broadcast(S, ap[ai]);
      a00 = x.fma(b0, a00);
      a01 = x.fma(b1, a01);
      x = FloatVector.broadcast(S, ap[ai + 1]);
      a10 = x.fma(b0, a10);
      a11 = x.fma(b1, a11);
      x = FloatVector.broadcast(S, ap[ai + 2]);
      a20 = x.fma(b0, a20);
      a21 = x.fma(b1, a21);
      x = FloatVector.broadcast(S, ap[ai + 3]);
      a30 = x.fma(b0, a30);
      a31 = x.fma(b1, a31);
      x = FloatVector.broadcast(S, ap[ai + 4]);
      a40 = x.fma(b0, a40);
      a41 = x.fma(b1, a41);
      x = FloatVector.broadcast(S, ap[ai + 5]);
      a50 = x.fma(b0, a50);
      a51 = x.fma(b1, a51);
      x = FloatVector.broadcast(S, ap[ai + 6]);
      a60 = x.fma(b0, a60);
      a61 = x.fma(b1, a61);
      x = FloatVector.broadcast(S, ap[ai + 7]);
      a70 = x.fma(b0, a70);
      a71 = x.fma(b1, a71);
    }
    a00.intoMemorySegment(cs, c0, ORDER, l0);
    a01.intoMemorySegment(cs, c0 + L * 4L, ORDER, h0);
    a10.intoMemorySegment(cs, c0 + stride, ORDER, l1);
    a11.intoMemorySegment(cs, c0 + stride + L * 4L, ORDER, h1);
    a20.intoMemorySegment(cs, c0 + 2 * stride, ORDER, l2);
    a21.intoMemorySegment(cs, c0 + 2 * stride + L * 4L, ORDER, h2);
    a30.intoMemorySegment(cs, c0 + 3 * stride, ORDER, l3);
    a31.intoMemorySegment(cs, c0 + 3 * stride + L * 4L, ORDER, h3);
    a40.intoMemorySegment(cs, c0 + 4 * stride, ORDER, l4);
    a41.intoMemorySegment(cs, c0 + 4 * stride + L * 4L, ORDER, h4);
    a50.intoMemorySegment(cs, c0 + 5 * stride, ORDER, l5);
    a51.intoMemorySegment(cs, c0 + 5 * stride + L * 4L, ORDER, h5);
    a60.intoMemorySegment(cs, c0 + 6 * stride, ORDER, l6);
    a61.intoMemorySegment(cs, c0 + 6 * stride + L * 4L, ORDER, h6);
    a70.intoMemorySegment(cs, c0 + 7 * stride, ORDER, l7);
    a71.intoMemorySegment(cs, c0 + 7 * stride + L * 4L, ORDER, h7);
  }

  private static void addBias(Matrix bias, Matrix c, int m0, int mc, int c0, int c1) {
    for (int r = m0; r < m0 + mc; r++) {
      for (int j = c0; j < c1; j++) {
        c.set(r, j, c.get(r, j) + bias.get(r, j));
      }
    }
  }
}
