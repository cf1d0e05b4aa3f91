package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every CudaBackend operation against the CpuBackend on random data at small, odd shapes, with
 * strided, broadcast and BF16 inputs. Bounds are relative to the output's largest magnitude: the
 * GPU sums in a different order (and uses different transcendental implementations).
 */
@Tag("gpu")
class CudaOpsParityTest {
  private static final Backend CPU = new CpuBackend(2);
  private static CudaBackend gpu;

  @BeforeAll
  static void open() {
    gpu = Gpu.backend();
  }

  private static Tensor rand(long seed, int... shape) {
    return RandomWeights.uniform(seed, 1f, shape);
  }

  /** Runs {@code op} on both backends (inputs uploaded by each) and compares the results. */
  private static void same(String what, double tol, Function<Backend, Tensor> op) {
    Tensor expected = CPU.download(op.apply(CPU));
    Tensor actualDevice = op.apply(gpu);
    assertEquals(gpu.device(), actualDevice.device(), what + " result stays on the GPU");
    Tensor actual = gpu.download(actualDevice);
    assertArrayEquals(expected.shape(), actual.shape(), what + " shape");
    float[] e = expected.toFloatArray(), a = actual.toFloatArray();
    double scale = 1e-30, worst = 0;
    for (float v : e) {
      scale = Math.max(scale, Math.abs(v));
    }
    for (int i = 0; i < e.length; i++) {
      double d = Double.isNaN(e[i]) && Double.isNaN(a[i]) ? 0 : Math.abs(e[i] - a[i]);
      worst = Math.max(worst, Double.isNaN(d) ? Double.POSITIVE_INFINITY : d);
    }
    System.out.printf("  %-34s max|diff|/max|ref| = %.2e (bound %.0e)%n", what, worst / scale, tol);
    assertTrue(worst <= tol * scale, what + ": max diff " + worst + " vs scale " + scale);
  }

  private static Tensor up(Backend b, Tensor t) {
    return b.upload(t, DType.F32);
  }

  @Test
  void linearAndMatmul() {
    Tensor x = rand(1, 2, 37, 64), w = rand(2, 48, 64), bias = rand(3, 48);
    same("linear", 1e-5, b -> b.linear(up(b, x), up(b, w), up(b, bias)));
    same("linear no bias", 1e-5, b -> b.linear(up(b, x), up(b, w), null));
    Tensor xt = rand(4, 64, 21);
    same(
        "linear of a transposed view",
        1e-5,
        b -> b.linear(up(b, xt).transpose(0, 1), up(b, w), null));
    same(
        "linear bf16 weights",
        1e-5,
        b -> b.linear(b.upload(x, DType.BF16), b.upload(w, DType.BF16), up(b, bias)));
    Tensor ma = rand(5, 3, 1, 17, 9), mb = rand(6, 4, 9, 13);
    same("matmul broadcast batch", 1e-5, b -> b.matmul(up(b, ma), up(b, mb)));
  }

  @Test
  void attention() {
    Tensor q = rand(7, 2, 37, 3, 16), k = rand(8, 2, 53, 3, 16), v = rand(9, 2, 53, 3, 16);
    same("attention", 1e-5, b -> b.attention(up(b, q), up(b, k), up(b, v), null, 0.25f));
    Tensor mask = rand(10, 2, 1, 1, 53);
    for (int j = 40; j < 53; j++) {
      mask.setFloat(-1e9f, 1, 0, 0, j);
    }
    Tensor rel = rand(11, 1, 3, 37, 53);
    same(
        "attention with bias",
        1e-5,
        b -> b.attention(up(b, q), up(b, k), up(b, v), b.add(up(b, mask), up(b, rel)), 1f));
    Tensor q2 = rand(12, 1, 70, 2, 128), k2 = rand(13, 1, 90, 2, 128);
    Tensor v2 = rand(14, 1, 90, 2, 128);
    same(
        "attention head dim 128",
        1e-5,
        b -> b.attention(up(b, q2), up(b, k2), up(b, v2), null, 0.088f));
    // The Wan VAE's single 384-wide head is beyond the kernels' shared memory: the GEMM path.
    Tensor q3 = rand(20, 2, 33, 1, 384), k3 = rand(21, 2, 33, 1, 384);
    Tensor v3 = rand(22, 2, 33, 1, 384), bias3 = rand(23, 2, 1, 33, 33);
    same(
        "attention head dim 384 with bias",
        1e-5,
        b -> b.attention(up(b, q3), up(b, k3), up(b, v3), up(b, bias3), 0.051f));
  }

  @Test
  void conv3d() {
    Tensor x = rand(15, 2, 5, 4, 9, 11), w = rand(16, 6, 5, 3, 3, 3), bias = rand(17, 6);
    same(
        "conv3d 3x3x3 pad 1",
        1e-5,
        b -> b.conv3d(up(b, x), up(b, w), up(b, bias), new int[] {1, 1, 1}, new int[] {1, 1, 1}));
    Tensor wp = rand(18, 6, 5, 1, 2, 2);
    same(
        "conv3d patch stride (1,2,2)",
        1e-5,
        b -> b.conv3d(up(b, x), up(b, wp), up(b, bias), new int[] {1, 2, 2}, new int[3]));
    Tensor w1 = rand(19, 7, 5, 1, 1, 1);
    same(
        "conv3d pointwise",
        1e-5,
        b -> b.conv3d(up(b, x), up(b, w1), null, new int[] {1, 1, 1}, new int[3]));
  }

  @Test
  void norms() {
    Tensor x = rand(20, 3, 7, 300), w = rand(21, 300), bias = rand(22, 300);
    same("layerNorm", 1e-5, b -> b.layerNorm(up(b, x), up(b, w), up(b, bias), 1e-6f));
    same("layerNorm no affine", 1e-5, b -> b.layerNorm(up(b, x), null, null, 1e-6f));
    same("rmsNorm", 1e-5, b -> b.rmsNorm(up(b, x), up(b, w), 1e-6f));
    same("softmax", 1e-5, b -> b.softmax(b.affine(up(b, x), 8f, 0f)));
    Tensor v = rand(23, 2, 5, 3, 4, 6);
    same("l2Normalize dim 1", 1e-5, b -> b.l2Normalize(up(b, v), 1, 1e-12f));
    same("sumLastDim", 1e-5, b -> b.sumLastDim(up(b, x)));
  }

  @Test
  void elementwise() {
    Tensor x = rand(24, 4, 33, 5);
    Tensor pos = RandomWeights.uniform(25, 1f, 4, 33, 5);
    same("gelu erf", 1e-6, b -> b.gelu(b.affine(up(b, x), 4f, 0f), false));
    same("gelu tanh", 1e-6, b -> b.gelu(b.affine(up(b, x), 4f, 0f), true));
    same("silu", 1e-6, b -> b.silu(b.affine(up(b, x), 4f, 0f)));
    for (Backend.UnaryOp op : Backend.UnaryOp.values()) {
      boolean positive = op == Backend.UnaryOp.SQRT || op == Backend.UnaryOp.RSQRT;
      same(
          "unary " + op,
          2e-6,
          b ->
              b.unary(
                  positive
                      ? b.affine(b.unary(up(b, pos), Backend.UnaryOp.ABS), 1f, 0.1f)
                      : b.affine(up(b, x), 3f, 0f),
                  op));
    }
    Tensor y = rand(26, 33, 1);
    for (Backend.BinaryOp op : Backend.BinaryOp.values()) {
      same(
          "binary " + op + " broadcast",
          1e-6,
          b -> b.binary(up(b, x), b.affine(up(b, y), 1f, 2f), op));
    }
    same(
        "binary of permuted views",
        0,
        b -> b.add(up(b, x).permute(2, 0, 1), up(b, rand(27, 5, 33, 4)).permute(0, 2, 1)));
    same("affine", 1e-6, b -> b.affine(up(b, x), -1.5f, 0.25f));
    same("clamp", 0, b -> b.clamp(up(b, x), -0.3f, 0.4f));
    Tensor rx = rand(28, 2, 6, 3, 8), cos = rand(29, 6, 4), sin = rand(30, 6, 4);
    same("rope", 1e-6, b -> b.rope(up(b, rx), up(b, cos), up(b, sin)));
  }

  @Test
  void shapesAndMemory() {
    Tensor a = rand(31, 2, 3, 5), c = rand(32, 2, 4, 5), d = rand(33, 5, 1, 2);
    same(
        "concat dim 1 (one part strided)",
        0,
        b -> b.concat(List.of(up(b, a), up(b, c), up(b, d).permute(2, 1, 0)), 1));
    same("pad with crop", 0, b -> b.pad(up(b, c), new int[] {2, -1, 0, 3, 1, 0}, 0.5f));
    Tensor img = rand(34, 2, 3, 4, 5);
    same("upsampleNearest2d", 0, b -> b.upsampleNearest2d(up(b, img), 2, 3));
    Tensor table = rand(35, 11, 6);
    Tensor ids = Tensor.ofLongs(new long[] {3, 0, 10, 3, 7, 1}, 2, 3);
    same("embedding", 0, b -> b.embedding(up(b, table), b.upload(ids, DType.I64)));
    same("contiguous of a permuted view", 0, b -> b.contiguous(up(b, c).permute(2, 0, 1)));
    same("bf16 round trip", 0, b -> b.upload(b.upload(c, DType.BF16), DType.F32));
    same("zeros", 0, b -> b.zeros(DType.F32, 3, 4));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            gpu.embedding(
                up(gpu, table), gpu.upload(Tensor.ofLongs(new long[] {11}, 1), DType.I64)));
  }
}
