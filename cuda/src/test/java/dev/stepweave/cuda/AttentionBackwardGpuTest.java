package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend.AttentionForward;
import dev.stepweave.tensor.Backend.AttentionGradients;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The attention backward on the device ({@code AttentionBackwardByOps} through the CUDA backend's
 * GEMMs, softmax and elementwise kernels) against the CPU's F32 kernel, in both precisions.
 *
 * <p>Bound: relative L2 ≤ 1e-2 per gradient, the BF16 mode's bound (issue 16: CUDA gradients within
 * the bf16 bound of the CPU's). The F32 backend's GEMMs may run TF32 (10-bit mantissa, relative
 * error ≤ 2⁻¹¹ per product input), the BF16 backend's BF16 inputs (≤ 2⁻⁹); both accumulate in F32,
 * so a few 1e-3 at most, where a wrong transpose, scale or row sum gives errors of order 1. The
 * last case is the 1.3B DiT's training shape (latent [1, 16, 9, 32, 32]: 2 304 tokens, 12 heads of
 * 128), whose scores take two query chunks within the ops' scratch budget.
 */
@Tag("gpu")
class AttentionBackwardGpuTest {
  private static final CpuBackend CPU = new CpuBackend();

  @Test
  void matchesTheCpuKernelWithinBf16Rounding() {
    AttentionCase[] cases = {
      new AttentionCase(1, 300, 300, 3, 64),
      new AttentionCase(2, 256, 77, 4, 32), // cross-attention: fewer keys than queries
      new AttentionCase(1, 2304, 2304, 12, 128)
    };
    for (CudaBackend gpu : new CudaBackend[] {Gpu.backend(), Gpu.bf16()}) {
      for (AttentionCase c : cases) {
        Tensor q = c.q(), k = c.k(), v = c.v();
        // A per-head bias with its gradient on the cross-attention case.
        Tensor bias = c.lk() == 77 ? RandomWeights.uniform(4, 1f, c.h(), c.lq(), c.lk()) : null;
        float scale = c.scale();
        Tensor out = CPU.attention(q, k, v, bias, scale);
        Tensor gradOut = RandomWeights.uniform(5, 1f, out.shape());
        AttentionGradients want =
            CPU.attentionBackward(
                new AttentionForward(q, k, v, bias, scale, out), gradOut, bias != null);
        long start = System.nanoTime();
        AttentionGradients got =
            gpu.attentionBackward(
                new AttentionForward(
                    gpu.upload(q, q.dtype()),
                    gpu.upload(k, k.dtype()),
                    gpu.upload(v, v.dtype()),
                    bias == null ? null : gpu.upload(bias, bias.dtype()),
                    scale,
                    gpu.upload(out, out.dtype())),
                gpu.upload(gradOut, gradOut.dtype()),
                bias != null);
        Tensor dq = gpu.download(got.q()), dk = gpu.download(got.k()), dv = gpu.download(got.v());
        double ms = (System.nanoTime() - start) / 1e6;
        double eq = RelativeL2.of(dq, want.q()), ek = RelativeL2.of(dk, want.k());
        double ev = RelativeL2.of(dv, want.v());
        double eb = bias == null ? 0 : RelativeL2.of(gpu.download(got.bias()), want.bias());
        System.out.printf(
            "  attention backward %s %s: rel L2 dq %.2e dk %.2e dv %.2e dbias %.2e (%.1f ms with"
                + " the downloads, first call)%n",
            gpu.precision(), c, eq, ek, ev, eb, ms);
        assertArrayEquals(q.shape(), dq.shape());
        assertArrayEquals(k.shape(), dk.shape());
        assertArrayEquals(v.shape(), dv.shape());
        for (double e : new double[] {eq, ek, ev, eb}) {
          assertTrue(e <= 1e-2, c + ": relative L2 " + e);
        }
      }
    }
  }
}
