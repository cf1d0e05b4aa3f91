package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Scaled dot-product attention by online softmax over tiles of keys: each query row keeps a running
 * maximum, normaliser and weighted value sum, so memory stays {@code O(tile)} per row whatever Lk.
 */
final class Attention {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  /** Keys per tile: four vectors of scores, so the q·k chains run four abreast. */
  private static final int KEY_TILE = 4 * L;

  /** Query rows per task: they share each packed key and value tile. */
  private static final int QUERY_BLOCK = 32;

  private final WorkPool pool;

  Attention(WorkPool pool) {
    this.pool = pool;
  }

  Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    OpShapes.attention(q, k, v);
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3);
    int lk = k.dim(1), dv = v.dim(3);
    MemorySegment qs = Dense.segment(q);
    MemorySegment ks = Dense.segment(k);
    MemorySegment vs = Dense.segment(v);
    Tensor biasView = biasView(bias, b, h, lq, lk);
    Tensor out = Dense.output(b, lq, h, dv);
    Heads heads = new Heads(qs, ks, vs, biasView, out.segment(), lq, lk, h, d, dv, scale);
    int queryBlocks = (lq + QUERY_BLOCK - 1) / QUERY_BLOCK;
    pool.run(
        b * h * queryBlocks,
        task -> {
          int block = task % queryBlocks;
          int head = (task / queryBlocks) % h;
          int batch = task / (queryBlocks * h);
          int i0 = block * QUERY_BLOCK;
          new QueryBlock(heads, batch, head, i0, Math.min(lq, i0 + QUERY_BLOCK)).run();
        });
    return out;
  }

  /** {@code bias} (or null) as an F32 view of shape {@code [B, H, Lq, Lk]}. */
  static Tensor biasView(Tensor bias, int b, int h, int lq, int lk) {
    return OpShapes.attentionBias(bias == null ? null : Dense.f32(bias), b, h, lq, lk);
  }

  /** The operands of one call, shared by its tasks. */
  private record Heads(
      MemorySegment q,
      MemorySegment k,
      MemorySegment v,
      Tensor bias,
      MemorySegment out,
      int lq,
      int lk,
      int h,
      int d,
      int dv,
      float scale) {}

  /**
   * Query rows {@code [i0, i1)} of one (batch, head). Every score is the FMA chain over the head
   * dimension in ascending order and every output the FMA chain over keys in ascending order, so a
   * row's result does not depend on the block it is computed in.
   */
  private static final class QueryBlock {
    private final Heads x;
    private final int batch;
    private final int head;
    private final int i0;
    private final int rows;

    /** Value width rounded up to whole groups of four vectors. */
    private final int dvPad;

    /** The key tile transposed, {@code [d][KEY_TILE]}, zero past the tile's last key. */
    private final float[] keys;

    /** The value tile, {@code [KEY_TILE][dvPad]}. */
    private final float[] values;

    private final float[] query;
    private final float[] scores = new float[KEY_TILE];
    private final float[] acc;
    private final float[] max;
    private final float[] norm;

    QueryBlock(Heads x, int batch, int head, int i0, int i1) {
      this.x = x;
      this.batch = batch;
      this.head = head;
      this.i0 = i0;
      this.rows = i1 - i0;
      this.dvPad = (x.dv() + 4 * L - 1) / (4 * L) * (4 * L);
      this.keys = new float[x.d() * KEY_TILE];
      this.values = new float[KEY_TILE * dvPad];
      this.query = new float[x.d()];
      this.acc = new float[rows * dvPad];
      this.max = new float[rows];
      this.norm = new float[rows];
      Arrays.fill(max, Float.NEGATIVE_INFINITY);
    }

    void run() {
      for (int j0 = 0; j0 < x.lk(); j0 += KEY_TILE) {
        int len = Math.min(KEY_TILE, x.lk() - j0);
        packTile(j0, len);
        for (int r = 0; r < rows; r++) {
          attendTile(r, j0, len);
        }
      }
      int dv = x.dv();
      for (int r = 0; r < rows; r++) {
        long oo = rowIndex(i0 + r, x.lq()) * dv;
        for (int c = 0; c < dv; c++) {
          Dense.set(x.out(), oo + c, acc[r * dvPad + c] / norm[r]);
        }
      }
    }

    /** Index of row {@code i} of this (batch, head) in a {@code [B, len, H, ·]} tensor, in rows. */
    private long rowIndex(int i, int len) {
      return ((long) batch * len + i) * x.h() + head;
    }

    private void packTile(int j0, int len) {
      int d = x.d();
      if (len < KEY_TILE) {
        Arrays.fill(keys, 0f);
      }
      for (int j = 0; j < len; j++) {
        long ko = rowIndex(j0 + j, x.lk()) * d;
        for (int c = 0; c < d; c++) {
          keys[c * KEY_TILE + j] = Dense.get(x.k(), ko + c);
        }
        MemorySegment.copy(
            x.v(),
            Dense.FLOAT,
            rowIndex(j0 + j, x.lk()) * x.dv() * Float.BYTES,
            values,
            j * dvPad,
            x.dv());
      }
    }

    /** Folds keys {@code [j0, j0+len)} into row r's running max, normaliser and value sum. */
    private void attendTile(int r, int j0, int len) {
      int d = x.d();
      MemorySegment.copy(
          x.q(), Dense.FLOAT, rowIndex(i0 + r, x.lq()) * d * Float.BYTES, query, 0, d);
      FloatVector s0 = FloatVector.zero(S);
      FloatVector s1 = FloatVector.zero(S);
      FloatVector s2 = FloatVector.zero(S);
      FloatVector s3 = FloatVector.zero(S);
      for (int c = 0; c < d; c++) {
        FloatVector qc = FloatVector.broadcast(S, query[c]);
        int at = c * KEY_TILE;
        s0 = qc.fma(FloatVector.fromArray(S, keys, at), s0);
        s1 = qc.fma(FloatVector.fromArray(S, keys, at + L), s1);
        s2 = qc.fma(FloatVector.fromArray(S, keys, at + 2 * L), s2);
        s3 = qc.fma(FloatVector.fromArray(S, keys, at + 3 * L), s3);
      }
      s0.intoArray(scores, 0);
      s1.intoArray(scores, L);
      s2.intoArray(scores, 2 * L);
      s3.intoArray(scores, 3 * L);
      float tileMax = Float.NEGATIVE_INFINITY;
      for (int j = 0; j < len; j++) {
        float s = scores[j] * x.scale();
        if (x.bias() != null) {
          s += x.bias().getFloat(batch, head, i0 + r, j0 + j);
        }
        scores[j] = s;
        tileMax = Math.max(tileMax, s);
      }
      float newMax = Math.max(max[r], tileMax);
      if (newMax == Float.NEGATIVE_INFINITY) {
        return;
      }
      float correction = Exp.exp(max[r] - newMax);
      norm[r] *= correction;
      max[r] = newMax;
      for (int j = 0; j < KEY_TILE; j += L) {
        FloatVector s = FloatVector.fromArray(S, scores, j);
        Exp.exp(s.sub(newMax)).intoArray(scores, j);
      }
      for (int j = 0; j < len; j++) {
        norm[r] += scores[j];
      }
      int row = r * dvPad;
      for (int c = 0; c < dvPad; c += 4 * L) {
        FloatVector a0 = FloatVector.fromArray(S, acc, row + c).mul(correction);
        FloatVector a1 = FloatVector.fromArray(S, acc, row + c + L).mul(correction);
        FloatVector a2 = FloatVector.fromArray(S, acc, row + c + 2 * L).mul(correction);
        FloatVector a3 = FloatVector.fromArray(S, acc, row + c + 3 * L).mul(correction);
        for (int j = 0; j < len; j++) {
          FloatVector p = FloatVector.broadcast(S, scores[j]);
          int at = j * dvPad + c;
          a0 = p.fma(FloatVector.fromArray(S, values, at), a0);
          a1 = p.fma(FloatVector.fromArray(S, values, at + L), a1);
          a2 = p.fma(FloatVector.fromArray(S, values, at + 2 * L), a2);
          a3 = p.fma(FloatVector.fromArray(S, values, at + 3 * L), a3);
        }
        a0.intoArray(acc, row + c);
        a1.intoArray(acc, row + c + L);
        a2.intoArray(acc, row + c + 2 * L);
        a3.intoArray(acc, row + c + 3 * L);
      }
    }
  }
}
