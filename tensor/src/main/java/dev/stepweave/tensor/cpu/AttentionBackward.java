package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Backend.AttentionGradients;
import dev.stepweave.tensor.OpShapes;
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
 * <p>Rows are taken {@value #ROWS} at a time so that each key's dK and dV rows are read and written
 * once per group, not once per query row. Sums run in a fixed order (keys ascending, query rows
 * ascending), so the result does not depend on the thread count.
 */
final class AttentionBackward {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  /** Query rows whose contributions to dK and dV are added in one pass over the keys. */
  private static final int ROWS = 4;

  private final WorkPool pool;

  AttentionBackward(WorkPool pool) {
    this.pool = pool;
  }

  AttentionGradients backward(
      Tensor q,
      Tensor k,
      Tensor v,
      Tensor bias,
      float scale,
      Tensor out,
      Tensor gradOut,
      boolean biasGradient) {
    int[] outShape = OpShapes.attention(q, k, v);
    for (Tensor t : new Tensor[] {out, gradOut}) {
      if (!Arrays.equals(t.shape(), outShape)) {
        throw new IllegalArgumentException(
            "attention backward: output and its gradient must be "
                + Arrays.toString(outShape)
                + ", got "
                + t);
      }
    }
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
    private final float[] dq;

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
      this.dq = new float[dPad];
      for (int g = 0; g < ROWS; g++) {
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
        for (int g = 0; g < rows; g++) {
          row(g, i0 + g);
        }
        keyUpdates(rows);
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
     * Query row {@code i} into slot {@code g}: its probabilities {@code p[g]}, its {@code ds[g]}
     * (scale not applied), its dQ written out, and its bias gradient if asked.
     */
    private void row(int g, int i) {
      int d = x.d(), dvw = x.dv(), lk = x.lk();
      float[] qr = query[g], gr = gradOut[g], pr = p[g], sr = ds[g];
      long qo = rowIndex(i, x.lq());
      MemorySegment.copy(x.q(), Dense.FLOAT, qo * d * Float.BYTES, qr, 0, d);
      MemorySegment.copy(x.gradOut(), Dense.FLOAT, qo * dvw * Float.BYTES, gr, 0, dvw);
      float rowDot = 0;
      for (int c = 0; c < dvw; c++) {
        rowDot = Math.fma(gr[c], Dense.get(x.out(), qo * dvw + c), rowDot);
      }
      // Scores, then the row's probabilities as the forward's softmax gives them.
      productStrip(qr, d, keysT, pr);
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
        writeRow(i, sr);
        return;
      }
      float sum = 0;
      for (int j = 0; j < kPad; j += L) {
        Exp.exp(FloatVector.fromArray(S, pr, j).sub(max)).intoArray(pr, j);
      }
      Arrays.fill(pr, lk, kPad, 0f);
      for (int j = 0; j < lk; j++) {
        sum += pr[j];
      }
      float inv = 1f / sum;
      for (int j = 0; j < kPad; j += L) {
        FloatVector.fromArray(S, pr, j).mul(inv).intoArray(pr, j);
      }
      // dS = p·(dO·Vᵀ − D); zero past the last key since p is.
      productStrip(gr, dvw, valuesT, sr);
      for (int j = 0; j < kPad; j += L) {
        FloatVector pv = FloatVector.fromArray(S, pr, j);
        pv.mul(FloatVector.fromArray(S, sr, j).sub(rowDot)).intoArray(sr, j);
      }
      writeRow(i, sr);
    }

    /** dQ of row {@code i} from its {@code dS} strip, and its bias gradient if asked. */
    private void writeRow(int i, float[] sr) {
      int d = x.d(), lk = x.lk();
      for (int c = 0; c < dPad; c += L) {
        FloatVector acc = FloatVector.zero(S);
        for (int j = 0; j < lk; j++) {
          acc =
              FloatVector.broadcast(S, sr[j])
                  .fma(FloatVector.fromArray(S, keys, j * dPad + c), acc);
        }
        acc.mul(x.scale()).intoArray(dq, c);
      }
      MemorySegment.copy(dq, 0, o.q(), Dense.FLOAT, rowIndex(i, x.lq()) * d * Float.BYTES, d);
      if (o.bias() != null) {
        long at = (((long) batch * x.h() + head) * x.lq() + i) * lk;
        MemorySegment.copy(sr, 0, o.bias(), Dense.FLOAT, at * Float.BYTES, lk);
      }
    }

    /** {@code out[j] = Σ_c row[c]·packed[c][j]} for every key j (zero past the last). */
    private void productStrip(float[] row, int width, float[] packed, float[] out) {
      for (int j = 0; j < kPad; j += L) {
        FloatVector acc = FloatVector.zero(S);
        for (int c = 0; c < width; c++) {
          acc =
              FloatVector.broadcast(S, row[c])
                  .fma(FloatVector.fromArray(S, packed, c * kPad + j), acc);
        }
        acc.intoArray(out, j);
      }
    }

    /** {@code dK[j] += scale·Σ_g dS[g][j]·q[g]} and {@code dV[j] += Σ_g p[g][j]·dO[g]}. */
    private void keyUpdates(int rows) {
      float scale = x.scale();
      for (int j = 0; j < x.lk(); j++) {
        for (int c = 0; c < dPad; c += L) {
          int at = j * dPad + c;
          FloatVector acc = FloatVector.fromArray(S, dk, at);
          for (int g = 0; g < rows; g++) {
            acc =
                FloatVector.broadcast(S, scale * ds[g][j])
                    .fma(FloatVector.fromArray(S, query[g], c), acc);
          }
          acc.intoArray(dk, at);
        }
        for (int c = 0; c < vPad; c += L) {
          int at = j * vPad + c;
          FloatVector acc = FloatVector.fromArray(S, dv, at);
          for (int g = 0; g < rows; g++) {
            acc =
                FloatVector.broadcast(S, p[g][j]).fma(FloatVector.fromArray(S, gradOut[g], c), acc);
          }
          acc.intoArray(dv, at);
        }
      }
    }
  }
}
