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
    AttentionCase[] cases = {
      new AttentionCase(2, 200, 77, 3, 64),
      new AttentionCase(1, 130, 300, 2, 128),
      new AttentionCase(1, 33, 40, 2, 16),
      new AttentionCase(2, 17, 9, 1, 32),
      new AttentionCase(1, 256, 512, 2, 128)
    };
    for (AttentionCase c : cases) {
      Tensor q = c.q(), k = c.k(), v = c.v();
      Tensor expected = CPU.attention(q, k, v, null, c.scale());
      Tensor actual = gpu.download(gpu.flashAttention(q, k, v, c.scale()));
      double err = RelativeL2.of(actual, expected);
      System.out.printf("  flash attention %s: rel L2 %.2e%n", c, err);
      assertTrue(err <= 1e-2, "relative L2 " + err);
    }
  }
}
