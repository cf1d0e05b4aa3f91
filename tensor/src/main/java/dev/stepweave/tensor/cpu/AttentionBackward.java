package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Backend.AttentionForward;
import dev.stepweave.tensor.Backend.AttentionGradients;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The backward of {@link Attention}, one task per (batch, head). Each query row's probabilities are
 * recomputed as one strip over the keys (scores, then {@code p = exp(s − max) / Σ}), and then
 * {@code dS = p·(dO·Vᵀ − D)} with {@code D = dO·O}, {@code dQ = scale·dS·K}, {@code dK +=
 * scale·dSᵀ·q} and {@code dV += pᵀ·dO}. A task holds its head's keys and values (packed both ways)
 * and its dK and dV sums, {@code O(Lk·D)}, and a strip of {@code Lk} per row in flight: never the
 * Lq×Lk scores, except the bias gradient when it is asked for (which is that size).
 *
 * <p>Rows are taken four at a time: each packed key or value vector loaded feeds four independent
 * FMA chains (one chain alone would wait on the FMA's latency), and each key's dK and dV rows are
 * read and written once per group, not once per query row. Sums run in a fixed order (keys
 * ascending, query rows ascending), so the result does not depend on the thread count.
 */
final class AttentionBackward {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  /** Query rows in flight together (the group's loops are written out for four). */
  private static final int ROWS = 4;

  private final WorkPool pool;

  AttentionBackward(WorkPool pool) {
    this.pool = pool;
  }

  AttentionGradients backward(AttentionForward forward, Tensor gradOut, boolean biasGradient) {
    forward.gradientOfOutput(gradOut);
    Tensor q = forward.q(), k = forward.k(), v = forward.v(), bias = forward.bias();
    Tensor out = forward.out();
    float scale = forward.scale();
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3);
    int lk = k.dim(1), dv = v.dim(3);
    Heads x =
        new Heads(
            Dense.segment(q),
            Dense.segment(k),
            Dense.segment(v),
            Dense.segment(out),
            Dense.segment(gradOut),
            Attention.biasView(bias, b, h, lq, lk),
            lq,
            lk,
            h,
            d,
            dv,
            scale);
    Tensor dq = Dense.output(b, lq, h, d);
    Tensor dk = Dense.output(b, lk, h, d);
    Tensor dvOut = Dense.output(b, lk, h, dv);
    Tensor dBias = biasGradient && bias != null ? Dense.output(b, h, lq, lk) : null;
    Outputs o =
        new Outputs(
            dq.segment(), dk.segment(), dvOut.segment(), dBias == null ? null : dBias.segment());
    pool.run(b * h, task -> new Head(x, o, task / h, task % h).run());
    return new AttentionGradients(dq, dk, dvOut, dBias);
  }

  /** The operands of one call, contiguous F32, shared by its tasks. */
  private record Heads(
      MemorySegment q,
      MemorySegment k,
      MemorySegment v,
      MemorySegment out,
      MemorySegment gradOut,
      Tensor bias,
      int lq,
      int lk,
      int h,
      int d,
      int dv,
      float scale) {}

  /** Where the gradients go; {@code bias} is null when its gradient was not asked for. */
  private record Outputs(MemorySegment q, MemorySegment k, MemorySegment v, MemorySegment bias) {}

  private static int padded(int n) {
    return (n + L - 1) / L * L;
  }

  /** One (batch, head): its keys and values packed, its dK and dV summed over every query row. */
  private static final class Head {
    private final Heads x;
    private final Outputs o;
    private final int batch;
    private final int head;
    private final int dPad;
    private final int vPad;
    private final int kPad;

    /** {@code [d][kPad]}: the scores of a row are a broadcast-FMA over these rows. */
    private final float[] keysT;

    /** {@code [dv][kPad]}: likewise {@code dO·Vᵀ}. */
    private final float[] valuesT;

    /** {@code [lk][dPad]}: {@code dQ = dS·K} runs along these rows. */
    private final float[] keys;

    private final float[] dk;
    private final float[] dv;

    // One group of query rows in flight.
    private final float[][] query = new float[ROWS][];
    private final float[][] gradOut = new float[ROWS][];
    private final float[][] p = new float[ROWS][];
    private final float[][] ds = new float[ROWS][];
    private final float[][] dq = new float[ROWS][];
    private final float[] rowDot = new float[ROWS];

    Head(Heads x, Outputs o, int batch, int head) {
      this.x = x;
      this.o = o;
      this.batch = batch;
      this.head = head;
      this.dPad = padded(x.d());
      this.vPad = padded(x.dv());
      this.kPad = padded(x.lk());
      this.keysT = new float[x.d() * kPad];
      this.valuesT = new float[x.dv() * kPad];
      this.keys = new float[x.lk() * dPad];
      this.dk = new float[x.lk() * dPad];
      this.dv = new float[x.lk() * vPad];
      for (int g = 0; g < ROWS; g++) {
        dq[g] = new float[dPad];
        query[g] = new float[dPad];
        gradOut[g] = new float[vPad];
        p[g] = new float[kPad];
        ds[g] = new float[kPad];
      }
    }

    /** Index of row {@code i} of this (batch, head) in a {@code [B, len, H, ·]} tensor, in rows. */
    private long rowIndex(int i, int len) {
      return ((long) batch * len + i) * x.h() + head;
    }

    void run() {
      pack();
      for (int i0 = 0; i0 < x.lq(); i0 += ROWS) {
        int rows = Math.min(ROWS, x.lq() - i0);
        load(i0, rows);
        // Scores, then dO·Vᵀ (into ds, finished per row below): four rows share each packed load.
        products(query, x.d(), keysT, kPad, kPad, 1f, p);
        products(gradOut, x.dv(), valuesT, kPad, kPad, 1f, ds);
        for (int g = 0; g < rows; g++) {
          probabilities(g, i0 + g);
        }
        for (int g = rows; g < ROWS; g++) {
          Arrays.fill(p[g], 0f);
          Arrays.fill(ds[g], 0f);
        }
        queryGradients(i0, rows);
        keyUpdates();
      }
      for (int j = 0; j < x.lk(); j++) {
        MemorySegment.copy(
            dk, j * dPad, o.k(), Dense.FLOAT, rowIndex(j, x.lk()) * x.d() * Float.BYTES, x.d());
        MemorySegment.copy(
            dv, j * vPad, o.v(), Dense.FLOAT, rowIndex(j, x.lk()) * x.dv() * Float.BYTES, x.dv());
      }
    }

    private void pack() {
      int d = x.d(), dvw = x.dv();
      for (int j = 0; j < x.lk(); j++) {
        long ko = rowIndex(j, x.lk()) * d;
        for (int c = 0; c < d; c++) {
          float kv = Dense.get(x.k(), ko + c);
          keysT[c * kPad + j] = kv;
          keys[j * dPad + c] = kv;
        }
        long vo = rowIndex(j, x.lk()) * dvw;
        for (int c = 0; c < dvw; c++) {
          valuesT[c * kPad + j] = Dense.get(x.v(), vo + c);
        }
      }
    }

    /**
     * Query rows {@code i0 ..} into the group's slots, {@code D = dO·O} of each; the slots past
     * {@code rows} are zero (their products are computed and thrown away).
     */
    private void load(int i0, int rows) {
      int d = x.d(), dvw = x.dv();
      for (int g = 0; g < ROWS; g++) {
        if (g >= rows) {
          Arrays.fill(query[g], 0f);
          Arrays.fill(gradOut[g], 0f);
          continue;
        }
        long qo = rowIndex(i0 + g, x.lq());
        MemorySegment.copy(x.q(), Dense.FLOAT, qo * d * Float.BYTES, query[g], 0, d);
        MemorySegment.copy(x.gradOut(), Dense.FLOAT, qo * dvw * Float.BYTES, gradOut[g], 0, dvw);
        float dot = 0;
        for (int c = 0; c < dvw; c++) {
          dot = Math.fma(gradOut[g][c], Dense.get(x.out(), qo * dvw + c), dot);
        }
        rowDot[g] = dot;
      }
    }

    /**
     * Row {@code i} in slot {@code g}: its scores in {@code p[g]} become its probabilities as the
     * forward's softmax gives them, and {@code ds[g]}, holding {@code dO·Vᵀ}, becomes {@code dS =
     * p·(dO·Vᵀ − D)} (zero past the last key, as p is); its bias gradient is written if asked.
     */
    private void probabilities(int g, int i) {
      int lk = x.lk();
      float[] pr = p[g], sr = ds[g];
      float max = Float.NEGATIVE_INFINITY;
      for (int j = 0; j < lk; j++) {
        float s = pr[j] * x.scale();
        if (x.bias() != null) {
          s += x.bias().getFloat(batch, head, i, j);
        }
        pr[j] = s;
        max = Math.max(max, s);
      }
      if (max == Float.NEGATIVE_INFINITY) {
        // Every key masked: the forward's output does not depend on q, k or v here.
        Arrays.fill(pr, 0f);
        Arrays.fill(sr, 0f);
      } else {
        for (int j = 0; j < kPad; j += L) {
          Exp.exp(FloatVector.fromArray(S, pr, j).sub(max)).intoArray(pr, j);
        }
        Arrays.fill(pr, lk, kPad, 0f);
        float sum = 0;
        for (int j = 0; j < lk; j++) {
          sum += pr[j];
        }
        float inv = 1f / sum;
        float dot = rowDot[g];
        for (int j = 0; j < kPad; j += L) {
          FloatVector pv = FloatVector.fromArray(S, pr, j).mul(inv);
          pv.intoArray(pr, j);
          pv.mul(FloatVector.fromArray(S, sr, j).sub(dot)).intoArray(sr, j);
        }
      }
      if (o.bias() != null) {
        long at = (((long) batch * x.h() + head) * x.lq() + i) * lk;
        MemorySegment.copy(sr, 0, o.bias(), Dense.FLOAT, at * Float.BYTES, lk);
      }
    }

    /**
     * {@code out[g][i] = scale·Σ_t weights[g][t]·matrix[t·stride + i]} for the group's four rows
     * and every {@code i < width} (a multiple of the vector length): each matrix vector is loaded
     * once for the four FMA chains. Scores and {@code dO·Vᵀ} are this over the packed transposes
     * ({@code t} a feature, {@code i} a key), dQ over the keys ({@code t} a key, {@code i} a
     * feature).
     */
    private static void products(
        float[][] weights,
        int terms,
        float[] matrix,
        int stride,
        int width,
        float scale,
        float[][] out) {
      float[] w0 = weights[0], w1 = weights[1], w2 = weights[2], w3 = weights[3];
      for (int i = 0; i < width; i += L) {
        FloatVector a0 = FloatVector.zero(S);
        FloatVector a1 = FloatVector.zero(S);
        FloatVector a2 = FloatVector.zero(S);
        FloatVector a3 = FloatVector.zero(S);
        for (int t = 0, at = i; t < terms; t++, at += stride) {
          FloatVector m = FloatVector.fromArray(S, matrix, at);
          a0 = FloatVector.broadcast(S, w0[t]).fma(m, a0);
          a1 = FloatVector.broadcast(S, w1[t]).fma(m, a1);
          a2 = FloatVector.broadcast(S, w2[t]).fma(m, a2);
          a3 = FloatVector.broadcast(S, w3[t]).fma(m, a3);
        }
        a0.mul(scale).intoArray(out[0], i);
        a1.mul(scale).intoArray(out[1], i);
        a2.mul(scale).intoArray(out[2], i);
        a3.mul(scale).intoArray(out[3], i);
      }
    }

    /** {@code dQ = scale·dS·K} of the group's rows, written out: each key row loaded once. */
    private void queryGradients(int i0, int rows) {
      int d = x.d();
      products(ds, x.lk(), keys, dPad, dPad, x.scale(), dq);
      for (int g = 0; g < rows; g++) {
        MemorySegment.copy(
            dq[g], 0, o.q(), Dense.FLOAT, rowIndex(i0 + g, x.lq()) * d * Float.BYTES, d);
      }
    }

    /** {@code dK[j] += scale·Σ_g dS[g][j]·q[g]} and {@code dV[j] += Σ_g p[g][j]·dO[g]}. */
    private void keyUpdates() {
      accumulate(dk, dPad, ds, query, x.scale());
      accumulate(dv, vPad, p, gradOut, 1f);
    }

    /**
     * {@code sums[j] += scale·Σ_g weights[g][j]·rows[g]} for every key j: the group's four row
     * vectors stay in registers over the keys, and each key's sum is loaded and stored once.
     * Missing rows of a short group have zero weights.
     */
    private void accumulate(float[] sums, int pad, float[][] weights, float[][] rows, float scale) {
      float[] w0 = weights[0], w1 = weights[1], w2 = weights[2], w3 = weights[3];
      for (int c = 0; c < pad; c += L) {
        FloatVector r0 = FloatVector.fromArray(S, rows[0], c).mul(scale);
        FloatVector r1 = FloatVector.fromArray(S, rows[1], c).mul(scale);
        FloatVector r2 = FloatVector.fromArray(S, rows[2], c).mul(scale);
        FloatVector r3 = FloatVector.fromArray(S, rows[3], c).mul(scale);
        for (int j = 0, at = c; j < x.lk(); j++, at += pad) {
          FloatVector acc = FloatVector.fromArray(S, sums, at);
          acc = FloatVector.broadcast(S, w0[j]).fma(r0, acc);
          acc = FloatVector.broadcast(S, w1[j]).fma(r1, acc);
          acc = FloatVector.broadcast(S, w2[j]).fma(r2, acc);
          acc = FloatVector.broadcast(S, w3[j]).fma(r3, acc);
          acc.intoArray(sums, at);
        }
      }
    }
  }
}
