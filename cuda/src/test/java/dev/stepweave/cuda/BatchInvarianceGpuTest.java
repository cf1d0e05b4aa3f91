package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The BF16 mode's batched ops at the 1.3B transformer's real shapes give each item of the batch the
 * bits it gets alone (docs/cuda.md, "Batch invariance"): the GEMMs (one linear, the stacked q/k/v,
 * the FFN's GELU epilogue), cuDNN's attention and the patch-embedding convolution, for batches of
 * 2, 3 and 8 items. Without it cuBLASLt and cuDNN choose per batch size, and a request's step
 * differs in the last bits when other requests share the call.
 */
@Tag("gpu")
class BatchInvarianceGpuTest {
  /** An 832×480 image's latent tokens at 1×2×2 patches, and a 256×256×33 video's. */
  private static final int[] TOKENS = {1560, 2304};

  private static final int[] BATCHES = {2, 3, 8};

  /** Uniform in [-scale, scale], rounded to BF16 values. */
  private static Tensor rand(long seed, float scale, int... shape) {
    return RandomWeights.uniform(seed, scale, shape).toHost(DType.BF16).toHost(DType.F32);
  }

  /**
   * Runs {@code op} on a batch of {@code batch} items of x, then on each item alone, and requires
   * each item's rows of the batched result to equal its own result bit for bit.
   */
  private static void invariant(
      String what, CudaBackend gpu, Tensor x, int batch, Function<Tensor, Tensor> op) {
    invariant(what, gpu, x, DType.BF16, batch, op);
  }

  /** As above, with x uploaded as {@code type}. */
  private static void invariant(
      String what, CudaBackend gpu, Tensor x, DType type, int batch, Function<Tensor, Tensor> op) {
    Tensor all = gpu.download(op.apply(gpu.upload(x, type))).toHost(DType.F32);
    for (int i = 0; i < batch; i++) {
      Tensor item = x.slice(0, i, i + 1).toHost(DType.F32);
      Tensor alone = gpu.download(op.apply(gpu.upload(item, type))).toHost(DType.F32);
      assertArrayEquals(
          alone.toFloatArray(),
          all.slice(0, i, i + 1).toHost(DType.F32).toFloatArray(),
          what + ": item " + i + " of a batch of " + batch);
    }
  }

  @Test
  void linearLayersGiveEachItemItsOwnBits() {
    CudaBackend gpu = Gpu.bf16();
    int dim = 1536, ffn = 8960;
    Tensor w = gpu.upload(rand(1, 0.03f, dim, dim), DType.BF16);
    Tensor bias = gpu.upload(rand(2, 0.1f, dim), DType.BF16);
    Tensor qkv = gpu.upload(rand(3, 0.03f, 3, dim, dim), DType.BF16);
    Tensor qkvBias = gpu.upload(rand(4, 0.1f, 3, dim), DType.BF16);
    Tensor up = gpu.upload(rand(5, 0.03f, ffn, dim), DType.BF16);
    Tensor upBias = gpu.upload(rand(6, 0.1f, ffn), DType.BF16);
    for (int tokens : TOKENS) {
      for (int batch : BATCHES) {
        Tensor x = rand(10 + batch, 1f, batch, tokens, dim);
        String at = tokens + " tokens";
        invariant("linear, " + at, gpu, x, batch, t -> gpu.linear(t, w, bias));
        invariant(
            "stacked q/k/v, " + at,
            gpu,
            x,
            batch,
            t -> gpu.concat(gpu.linearStacked(t, qkv, qkvBias), 2));
        invariant("FFN up + GELU, " + at, gpu, x, batch, t -> gpu.linearGeluTanh(t, up, upBias));
      }
    }
  }

  /**
   * F32 GEMMs of a training batch: the embedded DiT's FFN layers at 32 clips of 576 tokens (18 432
   * rows). The algorithm chosen for one item's rows may need more workspace at the full M than the
   * GEMMs pass; cuBLASLt's check accepts it but the launch refuses it (status 7, run 25), so such a
   * plan takes an algorithm of its own. The result is the CPU's within F32 rounding.
   */
  @Test
  void aTrainingBatchsManyRowsRunInF32() {
    CudaBackend gpu = Gpu.backend();
    CpuBackend cpu = new CpuBackend();
    for (int[] inOut : new int[][] {{128, 512}, {512, 128}}) {
      Tensor w = RandomWeights.uniform(50, 0.05f, inOut[1], inOut[0]);
      Tensor b = RandomWeights.uniform(51, 0.1f, inOut[1]);
      Tensor x = RandomWeights.uniform(52, 1f, 32, 576, inOut[0]);
      Tensor got =
          gpu.download(
              gpu.linear(
                  gpu.upload(x, DType.F32), gpu.upload(w, DType.F32), gpu.upload(b, DType.F32)));
      double err = RelativeL2.of(got, cpu.linear(x, w, b));
      assertTrue(err <= 1e-5, inOut[0] + " → " + inOut[1] + ": relative L2 " + err);
    }
  }

  @Test
  void attentionGivesEachItemItsOwnBits() {
    CudaBackend gpu = Gpu.bf16();
    for (int tokens : TOKENS) {
      for (int batch : BATCHES) {
        selfAttention(gpu, tokens, 12, 128, batch);
      }
    }
    // The tiny DiT's self- and cross-attention (BatchConsistencyGpuTest's; batch 4 differed in
    // runs 33-34): cuDNN's engines there are short enough that the heuristics configure them per
    // batch size.
    for (int batch : new int[] {2, 4, 6}) {
      selfAttention(gpu, 12, 2, 16, batch);
      Tensor q = rand(40 + batch, 1f, batch, 12, 2, 16);
      Tensor kv = rand(50 + batch, 1f, batch, 512, 2, 16);
      Tensor qkv = new CpuBackend().concat(List.of(q, kv), 1);
      invariant(
          "cross-attention, 12 queries, 512 keys",
          gpu,
          qkv,
          batch,
          t -> {
            Tensor keys = t.slice(1, 12, 524);
            return gpu.attention(t.slice(1, 0, 12), keys, keys, null, 0.25f);
          });
      System.out.printf(
          "  tiny attention at batch %d: %s%n",
          batch,
          gpu.attentionPath(
              gpu.upload(q, DType.BF16), gpu.upload(kv, DType.BF16), gpu.upload(kv, DType.BF16)));
    }
  }

  /** Self-attention of q, k, v sliced from one [B, L, 3H, D] tensor, as the DiT's are. */
  private static void selfAttention(
      CudaBackend gpu, int tokens, int heads, int headDim, int batch) {
    Tensor qkv = rand(20 + batch, 1f, batch, tokens, 3 * heads, headDim);
    invariant(
        "self-attention, " + tokens + " tokens of " + heads + " heads of " + headDim,
        gpu,
        qkv,
        batch,
        t ->
            gpu.attention(
                t.slice(2, 0, heads),
                t.slice(2, heads, 2 * heads),
                t.slice(2, 2 * heads, 3 * heads),
                null,
                0.088f));
  }

  @Test
  void thePatchEmbeddingGivesEachItemItsOwnBits() {
    CudaBackend gpu = Gpu.bf16();
    Tensor w = gpu.upload(rand(30, 0.1f, 1536, 16, 1, 2, 2), DType.BF16);
    Tensor bias = gpu.upload(rand(31, 0.1f, 1536), DType.BF16);
    for (int batch : BATCHES) {
      Tensor latents = rand(40 + batch, 1f, batch, 16, 1, 60, 104);
      for (DType type : new DType[] {DType.F32, DType.BF16}) {
        invariant(
            "patch embedding of " + type + " latents",
            gpu,
            latents,
            type,
            batch,
            t -> gpu.conv3d(t, w, bias, new int[] {1, 2, 2}, new int[3]));
      }
    }
  }
}
