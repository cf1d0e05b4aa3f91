package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Our tensor-core attention (flash.cu, run directly: the BF16 mode prefers cuDNN where present)
 * against the CPU's F32 attention: every supported head dim, query and key lengths that are not
 * multiples of the tiles, batches and heads, and keys fewer than one tile (the DiT's
 * cross-attention has 512 text tokens, its self-attention 32760).
 */
@Tag("gpu")
class FlashAttentionGpuTest {
  private static final CpuBackend CPU = new CpuBackend(2);

  @Test
  void matchesTheF32ReferenceWithinBf16Rounding() {
    CudaBackend gpu = Gpu.bf16();
    int[][] shapes = {
      {2, 200, 77, 3, 64},
      {1, 130, 300, 2, 128},
      {1, 33, 40, 2, 16},
      {2, 17, 9, 1, 32},
      {1, 256, 512, 2, 128}
    };
    for (int[] s : shapes) {
      int b = s[0], lq = s[1], lk = s[2], h = s[3], d = s[4];
      Tensor q = RandomWeights.uniform(1, 2f, b, lq, h, d);
      Tensor k = RandomWeights.uniform(2, 2f, b, lk, h, d);
      Tensor v = RandomWeights.uniform(3, 1f, b, lk, h, d);
      float scale = (float) (1 / Math.sqrt(d));
      Tensor expected = CPU.attention(q, k, v, null, scale);
      Tensor actual = gpu.download(gpu.flashAttention(q, k, v, scale));
      double err = RelativeL2.of(actual, expected);
      System.out.printf(
          "  flash attention b%d lq%d lk%d h%d d%d: rel L2 %.2e%n", b, lq, lk, h, d, err);
      assertTrue(err <= 1e-2, "relative L2 " + err);
    }
  }
}
