package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * cuDNN's fused attention (BF16 mode, no bias) against the CPU's F32 attention.
 *
 * <p>Bound: relative L2 ≤ 1e-2, the BF16 mode's bound. Q, K and V are rounded to BF16 (relative
 * error ≤ 2⁻⁹ each), the probabilities are rounded to BF16 before P·V and the output is stored in
 * BF16 (another ≤ 2⁻⁹ per element); with F32 softmax and accumulation these give a relative L2 of a
 * few 1e-3 at these magnitudes (flash.cu, which differs only in not rounding the output, measured
 * 2.3e-3…3.4e-3), so 1e-2 leaves room without hiding a wrong result (a wrong stride or scale gives
 * errors of order 1).
 */
@Tag("gpu")
class CudnnAttentionGpuTest {
  private static final CpuBackend CPU = new CpuBackend(2);

  @Test
  void matchesTheF32ReferenceWithinBf16Rounding() {
    CudaBackend gpu = Gpu.bf16();
    AttentionCase[] cases = {
      new AttentionCase(1, 300, 300, 3, 64),
      new AttentionCase(2, 256, 256, 12, 128),
      new AttentionCase(1, 1024, 512, 12, 128) // cross-attention: fewer keys than queries
    };
    for (AttentionCase c : cases) {
      Tensor q = c.q(), k = c.k(), v = c.v();
      float scale = c.scale();
      String path = gpu.attentionPath(q, k, v);
      Tensor out = gpu.attention(q, k, v, null, scale);
      double err = RelativeL2.of(gpu.download(out), CPU.attention(q, k, v, null, scale));
      double vsFlash =
          RelativeL2.of(gpu.download(out), gpu.download(gpu.flashAttention(q, k, v, scale)));
      System.out.printf(
          "  cuDNN attention %s: rel L2 %.2e (vs flash.cu %.2e) via %s%n", c, err, vsFlash, path);
      assertTrue(path.startsWith("cuDNN"), path);
      assertEquals(DType.BF16, out.dtype());
      assertArrayEquals(new int[] {c.b(), c.lq(), c.h(), c.d()}, out.shape());
      assertTrue(err <= 1e-2, "relative L2 " + err);
    }
  }

  @Test
  void stridedViewsOfAFusedProjectionPassWithTheirStrides() {
    CudaBackend gpu = Gpu.bf16();
    int b = 2, l = 200, h = 4, d = 64;
    // [B, L, 3, H, D]: q, k, v are views with a token stride of 3·H·D, as after a fused QKV GEMM.
    Tensor qkv = gpu.upload(RandomWeights.uniform(4, 2f, b, l, 3, h, d), DType.BF16);
    Tensor q = qkv.select(2, 0), k = qkv.select(2, 1), v = qkv.select(2, 2);
    float scale = 0.125f;
    String path = gpu.attentionPath(q, k, v);
    Tensor expected = CPU.attention(gpu.download(q), gpu.download(k), gpu.download(v), null, scale);
    double err = RelativeL2.of(gpu.download(gpu.attention(q, k, v, null, scale)), expected);
    System.out.printf("  cuDNN attention of strided views: rel L2 %.2e via %s%n", err, path);
    assertTrue(path.startsWith("cuDNN"), path);
    assertTrue(err <= 1e-2, "relative L2 " + err);
  }

  @Test
  void fallsBackCleanlyWhenCudnnRefusesAShape() {
    CudaBackend gpu = Gpu.bf16();
    // A head dim of 20 is not a multiple of 8: cuDNN's attention refuses it (16-byte rows).
    Tensor q = RandomWeights.uniform(5, 2f, 1, 40, 2, 20);
    Tensor k = RandomWeights.uniform(6, 2f, 1, 33, 2, 20);
    Tensor v = RandomWeights.uniform(7, 1f, 1, 33, 2, 20);
    String path = gpu.attentionPath(q, k, v);
    Tensor out = gpu.attention(q, k, v, null, 0.2f);
    double err = RelativeL2.of(gpu.download(out), CPU.attention(q, k, v, null, 0.2f));
    System.out.printf("  refused shape: rel L2 %.2e via %s%n", err, path);
    assertFalse(path.startsWith("cuDNN"), path);
    assertEquals(DType.F32, out.dtype(), "our kernels ran");
    assertTrue(err <= 1e-2, "relative L2 " + err);
    // The refusal leaves cuDNN usable for the next shape.
    Tensor q2 = RandomWeights.uniform(8, 2f, 1, 64, 2, 64);
    assertTrue(gpu.attentionPath(q2, q2, q2).startsWith("cuDNN"));
    double again =
        RelativeL2.of(
            gpu.download(gpu.attention(q2, q2, q2, null, 0.125f)),
            CPU.attention(q2, q2, q2, null, 0.125f));
    assertTrue(again <= 1e-2, "relative L2 after a refusal " + again);
  }
}
