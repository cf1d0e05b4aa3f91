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
   * @param c {@code [m, n]} output with unit column stride
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
          if (k == 0) {
            zeroTile(c, m0, mc, p0 * NR, Math.min(n, p1 * NR));
          }
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
                    cols,
                    k0 == 0);
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
   * {@code [col, col+cols)}, continuing the partial sums in C unless {@code first}.
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
      int cols,
      boolean first) {
    int bOff = (int) bOffset;
    MemorySegment cs = c.segment();
    long stride = c.rowStride() * Float.BYTES;
    long c0 = (c.offset() + row * c.rowStride() + col) * Float.BYTES;
    VectorMask<Float> m0 = S.indexInRange(0, cols);
    VectorMask<Float> m1 = S.indexInRange(L, cols);
    FloatVector z = FloatVector.zero(S);
    FloatVector a00 = first || rows <= 0 ? z : load(cs, c0, m0);
    FloatVector a01 = first || rows <= 0 ? z : load(cs, c0 + L * 4L, m1);
    FloatVector a10 = first || rows <= 1 ? z : load(cs, c0 + stride, m0);
    FloatVector a11 = first || rows <= 1 ? z : load(cs, c0 + stride + L * 4L, m1);
    FloatVector a20 = first || rows <= 2 ? z : load(cs, c0 + 2 * stride, m0);
    FloatVector a21 = first || rows <= 2 ? z : load(cs, c0 + 2 * stride + L * 4L, m1);
    FloatVector a30 = first || rows <= 3 ? z : load(cs, c0 + 3 * stride, m0);
    FloatVector a31 = first || rows <= 3 ? z : load(cs, c0 + 3 * stride + L * 4L, m1);
    FloatVector a40 = first || rows <= 4 ? z : load(cs, c0 + 4 * stride, m0);
    FloatVector a41 = first || rows <= 4 ? z : load(cs, c0 + 4 * stride + L * 4L, m1);
    FloatVector a50 = first || rows <= 5 ? z : load(cs, c0 + 5 * stride, m0);
    FloatVector a51 = first || rows <= 5 ? z : load(cs, c0 + 5 * stride + L * 4L, m1);
    FloatVector a60 = first || rows <= 6 ? z : load(cs, c0 + 6 * stride, m0);
    FloatVector a61 = first || rows <= 6 ? z : load(cs, c0 + 6 * stride + L * 4L, m1);
    FloatVector a70 = first || rows <= 7 ? z : load(cs, c0 + 7 * stride, m0);
    FloatVector a71 = first || rows <= 7 ? z : load(cs, c0 + 7 * stride + L * 4L, m1);
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
    store(a00, a01, cs, c0, m0, m1, rows > 0);
    store(a10, a11, cs, c0 + stride, m0, m1, rows > 1);
    store(a20, a21, cs, c0 + 2 * stride, m0, m1, rows > 2);
    store(a30, a31, cs, c0 + 3 * stride, m0, m1, rows > 3);
    store(a40, a41, cs, c0 + 4 * stride, m0, m1, rows > 4);
    store(a50, a51, cs, c0 + 5 * stride, m0, m1, rows > 5);
    store(a60, a61, cs, c0 + 6 * stride, m0, m1, rows > 6);
    store(a70, a71, cs, c0 + 7 * stride, m0, m1, rows > 7);
  }

  private static FloatVector load(MemorySegment s, long byteOffset, VectorMask<Float> mask) {
    return FloatVector.fromMemorySegment(S, s, byteOffset, ORDER, mask);
  }

  private static void store(
      FloatVector lo,
      FloatVector hi,
      MemorySegment s,
      long byteOffset,
      VectorMask<Float> m0,
      VectorMask<Float> m1,
      boolean rowExists) {
    if (rowExists) {
      lo.intoMemorySegment(s, byteOffset, ORDER, m0);
      hi.intoMemorySegment(s, byteOffset + L * 4L, ORDER, m1);
    }
  }

  private static void zeroTile(Matrix c, int m0, int mc, int c0, int c1) {
    for (int r = m0; r < m0 + mc; r++) {
      for (int j = c0; j < c1; j++) {
        c.set(r, j, 0f);
      }
    }
  }

  private static void addBias(Matrix bias, Matrix c, int m0, int mc, int c0, int c1) {
    for (int r = m0; r < m0 + mc; r++) {
      for (int j = c0; j < c1; j++) {
        c.set(r, j, c.get(r, j) + bias.get(r, j));
      }
    }
  }
}
