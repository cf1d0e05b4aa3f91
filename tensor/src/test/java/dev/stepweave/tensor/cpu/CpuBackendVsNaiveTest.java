package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.AttentionBackwardByOps;
import dev.stepweave.tensor.Backend.AttentionForward;
import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Every operation against {@link NaiveOps} on odd shapes (not multiples of the vector width or the
 * tile sizes) and on strided, permuted and broadcast views.
 */
class CpuBackendVsNaiveTest {
  private final CpuBackend cpu = new CpuBackend(2);
  private final SplittableRandom random = new SplittableRandom(42);

  private Tensor random(int... shape) {
    float[] v = new float[(int) Tensor.numel(shape)];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (random.nextDouble() * 2 - 1);
    }
    return Tensor.of(v, shape);
  }

  /** A non-contiguous view with the given shape: the transpose of a random tensor. */
  private Tensor transposed(int... shape) {
    int[] swapped = shape.clone();
    swapped[shape.length - 1] = shape[shape.length - 2];
    swapped[shape.length - 2] = shape[shape.length - 1];
    return random(swapped).transpose(-1, -2);
  }

  /**
   * Elementwise {@code |e - a| <= relTol * max(|e|, floor * max|e|)}: a relative bound, relaxed to
   * a fraction {@code floor} of the tensor's largest magnitude where sums cancel.
   */
  private static void assertClose(Tensor expected, Tensor actual, float relTol, float floor) {
    assertClose(expected, actual, relTol, floor, "");
  }

  private static void assertClose(
      Tensor expected, Tensor actual, float relTol, float floor, String what) {
    assertArrayEquals(expected.shape(), actual.shape());
    float[] e = expected.toFloatArray();
    float[] a = actual.toFloatArray();
    float scale = 0;
    for (float v : e) {
      scale = Math.max(scale, Math.abs(v));
    }
    for (int i = 0; i < e.length; i++) {
      float tol = relTol * Math.max(Math.abs(e[i]), scale * floor);
      if (!(Math.abs(e[i] - a[i]) <= tol)) {
        throw new AssertionError(
            what
                + " element "
                + i
                + ": expected "
                + e[i]
                + " but was "
                + a[i]
                + " (tol "
                + tol
                + ")");
      }
    }
  }

  private static void assertClose(Tensor expected, Tensor actual, float relTol) {
    assertClose(expected, actual, relTol, 0f);
  }

  private static void assertBitExact(Tensor expected, Tensor actual) {
    assertArrayEquals(expected.shape(), actual.shape());
    assertArrayEquals(expected.toFloatArray(), actual.toFloatArray());
  }

  @Test
  void linearMatchesFmaChainExactly() {
    for (int[] mkn : new int[][] {{1, 1, 1}, {7, 33, 17}, {37, 300, 71}, {130, 517, 65}}) {
      Tensor x = random(mkn[0], mkn[1]);
      Tensor w = random(mkn[2], mkn[1]);
      Tensor b = random(mkn[2]);
      assertBitExact(NaiveOps.linear(x, w, b), cpu.linear(x, w, b));
      assertBitExact(NaiveOps.linear(x, w, null), cpu.linear(x, w, null));
    }
  }

  @Test
  void linearReadsStridedAndLowPrecisionInputs() {
    Tensor x = random(3, 5, 19).permute(1, 0, 2);
    Tensor w = transposed(23, 19);
    Tensor wb = cpu.upload(random(23, 19), DType.BF16);
    assertBitExact(NaiveOps.linear(x, w, null), cpu.linear(x, w, null));
    assertBitExact(NaiveOps.linear(x, wb, null), cpu.linear(x, wb, null));
  }

  @Test
  void matmulMatchesFmaChainExactlyWithBroadcastBatch() {
    Tensor a = random(2, 1, 9, 35);
    Tensor b = transposed(3, 35, 41);
    assertBitExact(NaiveOps.matmul(a, b), cpu.matmul(a, b));
    Tensor shared = random(35, 6);
    assertBitExact(NaiveOps.matmul(a, shared), cpu.matmul(a, shared));
    // Both operands read through their strides (the backward's gᵀ·x), nothing copied first.
    Tensor aT = transposed(2, 1, 9, 35);
    assertBitExact(NaiveOps.matmul(aT, b), cpu.matmul(aT, b));
    assertBitExact(
        NaiveOps.matmul(aT, shared.expand(3, 35, 6)), cpu.matmul(aT, shared.expand(3, 35, 6)));
  }

  @Test
  void conv3dMatchesDirectConvolution() {
    Tensor x = random(2, 3, 4, 7, 9);
    Tensor w3 = random(5, 3, 3, 3, 3);
    Tensor b = random(5);
    int[] one = {1, 1, 1};
    assertBitExact(NaiveOps.conv3d(x, w3, b, one, one), cpu.conv3d(x, w3, b, one, one));
    assertBitExact(
        NaiveOps.conv3d(x, w3, null, new int[] {1, 2, 2}, new int[] {0, 1, 0}),
        cpu.conv3d(x, w3, null, new int[] {1, 2, 2}, new int[] {0, 1, 0}));
    Tensor w1 = random(4, 3, 1, 1, 1);
    int[] zero = {0, 0, 0};
    assertBitExact(
        NaiveOps.conv3d(x, w1, b.slice(0, 0, 4), one, zero),
        cpu.conv3d(x, w1, b.slice(0, 0, 4), one, zero));
    Tensor patch = random(6, 3, 1, 2, 2);
    Tensor xEven = random(1, 3, 2, 8, 6).permute(0, 1, 2, 3, 4);
    int[] patchStride = {1, 2, 2};
    assertBitExact(
        NaiveOps.conv3d(xEven, patch, null, patchStride, zero),
        cpu.conv3d(xEven, patch, null, patchStride, zero));
  }

  @Test
  void attentionMatchesFullSoftmax() {
    Tensor q = random(2, 37, 3, 20);
    Tensor k = random(2, 3, 70, 20).permute(0, 2, 1, 3);
    Tensor v = random(2, 70, 3, 12);
    assertClose(
        NaiveOps.attention(q, k, v, null, 0.3f), cpu.attention(q, k, v, null, 0.3f), 1e-5f, 1f);
    Tensor perHead = random(3, 37, 70);
    assertClose(
        NaiveOps.attention(q, k, v, perHead, 1f), cpu.attention(q, k, v, perHead, 1f), 1e-5f, 1f);
    Tensor mask = random(2, 1, 1, 70);
    assertClose(
        NaiveOps.attention(q, k, v, mask, 0.5f), cpu.attention(q, k, v, mask, 0.5f), 1e-5f, 1f);
  }

  /**
   * The backward against the textbook formulas in double, on odd shapes and a permuted key, without
   * a bias, with a per-head one (its gradient asked for) and with a mask that hides every key of a
   * row (whose gradients are zero: its output does not depend on q, k or v).
   */
  @Test
  void attentionBackwardMatchesFullMatrixFormulas() {
    Tensor q = random(2, 37, 3, 20);
    Tensor k = random(2, 3, 70, 20).permute(0, 2, 1, 3);
    Tensor v = random(2, 70, 3, 12);
    Tensor perHead = random(3, 37, 70);
    float[] masked = random(2, 1, 37, 70).toFloatArray();
    Arrays.fill(masked, 5 * 70, 6 * 70, Float.NEGATIVE_INFINITY);
    Tensor mask = Tensor.of(masked, 2, 1, 37, 70);
    for (Tensor bias : Arrays.asList(null, perHead, mask)) {
      float scale = bias == null ? 0.3f : 0.5f;
      Tensor out = cpu.attention(q, k, v, bias, scale);
      Tensor gradOut = random(out.shape());
      var got =
          cpu.attentionBackward(
              new AttentionForward(q, k, v, bias, scale, out), gradOut, bias != null);
      Tensor[] want = NaiveOps.attentionBackward(q, k, v, bias, scale, gradOut);
      String with = bias == null ? "no bias" : Arrays.toString(bias.shape()) + " bias";
      assertClose(want[0], got.q(), 1e-4f, 1e-2f, "dq, " + with);
      assertClose(want[1], got.k(), 1e-4f, 1e-2f, "dk, " + with);
      assertClose(want[2], got.v(), 1e-4f, 1e-2f, "dv, " + with);
      if (bias == null) {
        assertEquals(null, got.bias(), "no bias gradient unless asked");
      } else {
        assertClose(want[3], got.bias(), 1e-4f, 1e-2f, "dbias, " + with);
      }
    }
    float[] maskedRow =
        Arrays.copyOfRange(
            cpu.attentionBackward(
                    new AttentionForward(q, k, v, mask, 0.5f, cpu.attention(q, k, v, mask, 0.5f)),
                    random(2, 37, 3, 12),
                    false)
                .q()
                .toFloatArray(),
            5 * 3 * 20,
            6 * 3 * 20);
    assertArrayEquals(new float[3 * 20], maskedRow, "a fully masked row's dq");
  }

  @Test
  void attentionBackwardByOpsMatchesTheKernel() {
    Tensor q = random(2, 37, 3, 20);
    Tensor k = random(2, 3, 70, 20).permute(0, 2, 1, 3);
    Tensor v = random(2, 70, 3, 12);
    float[] masked = random(2, 1, 37, 70).toFloatArray();
    // A finite mask, as the models use, hiding a whole row and half of another.
    Arrays.fill(masked, 5 * 70, 6 * 70, -1e9f);
    Arrays.fill(masked, 9 * 70, 9 * 70 + 35, -1e9f);
    Tensor mask = Tensor.of(masked, 2, 1, 37, 70);
    for (Tensor bias : Arrays.asList(null, random(3, 37, 70), mask)) {
      Tensor out = cpu.attention(q, k, v, bias, 0.4f);
      Tensor gradOut = random(out.shape());
      var forward = new AttentionForward(q, k, v, bias, 0.4f, out);
      var want = cpu.attentionBackward(forward, gradOut, bias != null);
      // Scratch for 5 query rows a chunk (8 chunks, the last short), then for all of them.
      for (long scratch : new long[] {5L * 4 * 2 * 3 * 70 * 4, 1L << 30}) {
        var got = AttentionBackwardByOps.backward(cpu, forward, gradOut, bias != null, scratch);
        String with =
            (bias == null ? "no bias" : Arrays.toString(bias.shape()) + " bias")
                + ", scratch "
                + scratch;
        assertClose(want.q(), got.q(), 1e-4f, 1e-2f, "dq, " + with);
        assertClose(want.k(), got.k(), 1e-4f, 1e-2f, "dk, " + with);
        assertClose(want.v(), got.v(), 1e-4f, 1e-2f, "dv, " + with);
        if (bias == null) {
          assertEquals(null, got.bias(), "no bias gradient unless asked");
        } else {
          assertClose(want.bias(), got.bias(), 1e-4f, 1e-2f, "dbias, " + with);
        }
      }
    }
    Tensor none = random(2, 0, 3, 20);
    var empty =
        AttentionBackwardByOps.backward(
            cpu,
            new AttentionForward(none, k, v, null, 0.4f, random(2, 0, 3, 12)),
            random(2, 0, 3, 12),
            false,
            1L << 20);
    assertArrayEquals(new int[] {2, 70, 3, 20}, empty.k().shape(), "no queries: dk of k's shape");
    assertArrayEquals(new float[2 * 70 * 3 * 20], empty.k().toFloatArray(), "and zero");
  }

  /**
   * Shifting every key by one vector changes no softmax, so without a bias the keys' gradients sum
   * to zero — and must still when the forward's output was rounded to BF16, as a BF16 forward's is:
   * the backward may not read the output's rounding into every key's gradient.
   */
  @Test
  void attentionBackwardByOpsKeepsTheKeysShiftInvarianceUnderABf16Output() {
    Tensor q = random(1, 29, 2, 16);
    Tensor k = random(1, 41, 2, 16);
    Tensor v = random(1, 41, 2, 16);
    float[] rounded = cpu.attention(q, k, v, null, 0.25f).toFloatArray();
    for (int i = 0; i < rounded.length; i++) {
      int bits = Float.floatToRawIntBits(rounded[i]);
      rounded[i] = Float.intBitsToFloat((bits + 0x7FFF + ((bits >>> 16) & 1)) & 0xFFFF0000);
    }
    var forward = new AttentionForward(q, k, v, null, 0.25f, Tensor.of(rounded, 1, 29, 2, 16));
    float[] dk =
        AttentionBackwardByOps.backward(cpu, forward, random(1, 29, 2, 16), false, 1L << 20)
            .k()
            .toFloatArray();
    for (int head = 0; head < 2; head++) {
      for (int d = 0; d < 16; d++) {
        double sum = 0, size = 0;
        for (int key = 0; key < 41; key++) {
          float g = dk[(key * 2 + head) * 16 + d];
          sum += g;
          size += Math.abs(g);
        }
        assertTrue(
            Math.abs(sum) <= 1e-5 * size,
            "head " + head + ", dim " + d + ": Σ dK " + sum + " over Σ|dK| " + size);
      }
    }
  }

  @Test
  void normsMatchDoublePrecision() {
    Tensor x = random(5, 3, 77);
    Tensor xt = transposed(13, 50);
    Tensor w = random(77), b = random(77);
    assertClose(NaiveOps.layerNorm(x, w, b, 1e-6f), cpu.layerNorm(x, w, b, 1e-6f), 1e-5f, 1e-2f);
    assertClose(
        NaiveOps.layerNorm(xt, null, null, 1e-6f),
        cpu.layerNorm(xt, null, null, 1e-6f),
        1e-5f,
        1e-2f);
    assertClose(NaiveOps.rmsNorm(x, w, 1e-6f), cpu.rmsNorm(x, w, 1e-6f), 1e-5f);
    assertClose(NaiveOps.rmsNorm(xt, null, 1e-6f), cpu.rmsNorm(xt, null, 1e-6f), 1e-5f);
    assertClose(NaiveOps.softmax(x), cpu.softmax(x), 1e-5f);
    assertClose(NaiveOps.softmax(xt), cpu.softmax(xt), 1e-5f);
    Tensor video = random(2, 19, 3, 5, 7);
    for (int dim = 0; dim < 5; dim++) {
      assertClose(
          NaiveOps.l2Normalize(video, dim, 1e-12f), cpu.l2Normalize(video, dim, 1e-12f), 1e-5f);
    }
  }

  @Test
  void sumLastDimMatchesDoubleSum() {
    Tensor x = transposed(6, 1001);
    assertClose(NaiveOps.sumLastDim(x), cpu.sumLastDim(x), 1e-5f);
  }

  @Test
  void unaryActivationsMatchDoublePrecision() {
    Tensor x = cpu.affine(random(3, 131), 8, 0);
    for (UnaryOp op : UnaryOp.values()) {
      Tensor in = op == UnaryOp.SQRT || op == UnaryOp.RSQRT ? cpu.unary(x, UnaryOp.ABS) : x;
      float[] e = in.toFloatArray();
      for (int i = 0; i < e.length; i++) {
        e[i] = (float) NaiveOps.unary(op, e[i]);
      }
      assertClose(Tensor.of(e, in.shape()), cpu.unary(in, op), 2e-6f, 1e-6f, op.name());
    }
    float[] g = x.toFloatArray(), gt = x.toFloatArray(), s = x.toFloatArray();
    for (int i = 0; i < g.length; i++) {
      g[i] = (float) NaiveOps.gelu(g[i], false);
      gt[i] = (float) NaiveOps.gelu(gt[i], true);
      s[i] = (float) (s[i] / (1 + Math.exp(-s[i])));
    }
    assertClose(Tensor.of(g, x.shape()), cpu.gelu(x, false), 2e-6f);
    assertClose(Tensor.of(gt, x.shape()), cpu.gelu(x, true), 2e-6f);
    assertClose(Tensor.of(s, x.shape()), cpu.silu(x), 2e-6f);
  }

  @Test
  void erfIsAccurateEverywhere() {
    for (double x = -5; x <= 5; x += 1e-3) {
      float v = (float) x;
      assertEquals(
          NaiveOps.erf(v),
          ScalarMath.erf(v),
          1.5e-7 * Math.max(1e-3, Math.abs(NaiveOps.erf(v))),
          "erf(" + v + ")");
    }
  }

  @Test
  void binaryBroadcastIsExact() {
    Tensor a = random(4, 1, 37);
    Tensor b = transposed(5, 37, 1).squeeze(-1);
    for (BinaryOp op : BinaryOp.values()) {
      assertBitExact(NaiveOps.binary(a, b, op), cpu.binary(a, b, op));
      assertBitExact(NaiveOps.binary(b, a, op), cpu.binary(b, a, op));
    }
    Tensor scalar = Tensor.of(new float[] {0.5f});
    assertBitExact(NaiveOps.binary(a, scalar, BinaryOp.MUL), cpu.mul(a, scalar));
  }

  @Test
  void scalarMapsAreExact() {
    Tensor x = transposed(9, 41);
    float[] e = x.toFloatArray(), c = x.toFloatArray();
    for (int i = 0; i < e.length; i++) {
      e[i] = e[i] * 1.5f + 0.25f;
      c[i] = Math.min(Math.max(c[i], -0.3f), 0.4f);
    }
    assertBitExact(Tensor.of(e, 9, 41), cpu.affine(x, 1.5f, 0.25f));
    assertBitExact(Tensor.of(c, 9, 41), cpu.clamp(x, -0.3f, 0.4f));
  }

  @Test
  void ropeIsExact() {
    Tensor x = random(2, 5, 3, 6).permute(0, 2, 1, 3);
    Tensor cos = random(3, 3), sin = transposed(3, 3);
    assertBitExact(NaiveOps.rope(x, cos, sin), cpu.rope(x, cos, sin));
  }

  @Test
  void shapeOpsAreExact() {
    Tensor a = random(2, 3, 5), b = transposed(2, 4, 5), c = random(2, 1, 5);
    assertBitExact(NaiveOps.concat(List.of(a, b, c), 1), cpu.concat(List.of(a, b, c), 1));
    assertBitExact(
        NaiveOps.concat(List.of(a, a.expand(2, 3, 5)), -1), cpu.concat(List.of(a, a), -1));
    int[] pads = {1, 2, 0, 3, 2, 0};
    assertBitExact(NaiveOps.pad(b, pads, -7f), cpu.pad(b, pads, -7f));
    assertBitExact(NaiveOps.pad(b, new int[] {-1, 1}, 0f), cpu.pad(b, new int[] {-1, 1}, 0f));
    assertBitExact(NaiveOps.upsampleNearest2d(b, 3, 2), cpu.upsampleNearest2d(b, 3, 2));
    Tensor table = random(11, 6);
    Tensor ids = Tensor.ofLongs(new long[] {3, 10, 0, 3, 7, 1}, 2, 3);
    Tensor out = cpu.embedding(table, ids);
    assertArrayEquals(new int[] {2, 3, 6}, out.shape());
    assertArrayEquals(
        table.select(0, 7).toFloatArray(), out.select(0, 1).select(0, 1).toFloatArray());
    Tensor ids32 = cpu.upload(ids, DType.I32);
    assertBitExact(out, cpu.embedding(table, ids32));
  }

  @Test
  void contiguousAndUploadPreserveValues() {
    Tensor t = transposed(7, 9);
    assertTrue(cpu.contiguous(t).isContiguous());
    assertBitExact(t, cpu.contiguous(t));
    Tensor half = cpu.upload(t, DType.F16);
    assertEquals(DType.F16, half.dtype());
    assertTrue(half.isContiguous());
    float[] expected = t.toFloatArray();
    for (int i = 0; i < expected.length; i++) {
      expected[i] = Float.float16ToFloat(Float.floatToFloat16(expected[i]));
    }
    assertArrayEquals(expected, cpu.download(half).toFloatArray());
    assertEquals(Arrays.toString(t.shape()), Arrays.toString(cpu.download(half).shape()));
  }
}
