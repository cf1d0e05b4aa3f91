package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Scaled dot-product attention by online softmax over tiles of keys: each query row keeps a running
 * maximum, normaliser and weighted value sum, so memory stays {@code O(tile)} per row whatever Lk.
 */
final class Attention {
  private static final int KEY_TILE = 64;

  private final WorkPool pool;

  Attention(WorkPool pool) {
    this.pool = pool;
  }

  Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
      throw new IllegalArgumentException(
          "attention wants rank-4 [B, L, H, D] q, k, v; got " + q + ", " + k + ", " + v);
    }
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3);
    int lk = k.dim(1), dv = v.dim(3);
    if (k.dim(0) != b || k.dim(2) != h || k.dim(3) != d) {
      throw new IllegalArgumentException("attention key " + k + " does not match query " + q);
    }
    if (v.dim(0) != b || v.dim(1) != lk || v.dim(2) != h) {
      throw new IllegalArgumentException("attention value " + v + " does not match key " + k);
    }
    MemorySegment qs = Dense.segment(q);
    MemorySegment ks = Dense.segment(k);
    MemorySegment vs = Dense.segment(v);
    Tensor biasView = null;
    if (bias != null) {
      try {
        biasView = Dense.f32(bias).expand(b, h, lq, lk);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "attention bias "
                + Arrays.toString(bias.shape())
                + " does not broadcast to [B, H, Lq, Lk] = "
                + Arrays.toString(new int[] {b, h, lq, lk}));
      }
    }
    Tensor bv = biasView;
    Tensor out = Dense.output(b, lq, h, dv);
    MemorySegment os = out.segment();
    pool.run(
        b * h * lq,
        task -> {
          int i = task % lq;
          int head = (task / lq) % h;
          int batch = task / (lq * h);
          long qo = (((long) batch * lq + i) * h + head) * d;
          float[] scores = new float[KEY_TILE];
          float[] acc = new float[dv];
          float max = Float.NEGATIVE_INFINITY;
          float norm = 0f;
          for (int j0 = 0; j0 < lk; j0 += KEY_TILE) {
            int len = Math.min(KEY_TILE, lk - j0);
            float tileMax = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < len; j++) {
              long ko = (((long) batch * lk + j0 + j) * h + head) * d;
              float dot = 0f;
              for (int c = 0; c < d; c++) {
                dot = Math.fma(Dense.get(qs, qo + c), Dense.get(ks, ko + c), dot);
              }
              float s = dot * scale;
              if (bv != null) {
                s += bv.getFloat(batch, head, i, j0 + j);
              }
              scores[j] = s;
              tileMax = Math.max(tileMax, s);
            }
            float newMax = Math.max(max, tileMax);
            if (newMax == Float.NEGATIVE_INFINITY) {
              continue;
            }
            float correction = (float) Math.exp(max - newMax);
            norm *= correction;
            for (int c = 0; c < dv; c++) {
              acc[c] *= correction;
            }
            for (int j = 0; j < len; j++) {
              float p = (float) Math.exp(scores[j] - newMax);
              norm += p;
              long vo = (((long) batch * lk + j0 + j) * h + head) * dv;
              for (int c = 0; c < dv; c++) {
                acc[c] = Math.fma(p, Dense.get(vs, vo + c), acc[c]);
              }
            }
            max = newMax;
          }
          long oo = (((long) batch * lq + i) * h + head) * dv;
          for (int c = 0; c < dv; c++) {
            Dense.set(os, oo + c, acc[c] / norm);
          }
        });
    return out;
  }
}
