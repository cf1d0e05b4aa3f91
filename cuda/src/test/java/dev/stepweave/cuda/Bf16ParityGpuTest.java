package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.wan.WanCards;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The golden DiT recording through the performance path: BF16 weights on a {@link Precision#BF16}
 * backend (BF16 activations, fused kernels, tensor-core attention) within relative L2 1e-2 of the
 * F32 reference output, and the F32 backend within the card's max-abs tolerance — both with the
 * forward's own block-by-block release ({@code Backend.chain}, {@code Backend.scoped}), which would
 * corrupt the output if a live tensor were released.
 */
@Tag("gpu")
class Bf16ParityGpuTest {
  private static final Path GOLDEN =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"));

  private static Tensor forward(CudaBackend gpu, DType weights, SafetensorsFile rec) {
    Path dir = GOLDEN.resolve("wan21-tiny").resolve("transformer");
    WanTransformerConfig cfg = WanTransformerConfig.read(dir.resolve("config.json"));
    try (SafetensorsFile ckpt =
        SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"))) {
      WanTransformer dit = WanTransformer.load(cfg, new Weights(ckpt, gpu, weights));
      Map<String, DType> dtypes = new HashMap<>();
      Tensor out =
          dit.forward(
              gpu.upload(rec.load("hidden_states"), DType.F32),
              gpu.upload(rec.load("timestep"), DType.F32),
              gpu.upload(rec.load("encoder_hidden_states"), DType.F32),
              (name, value) -> dtypes.put(name, value.dtype()));
      DType activations = gpu.precision() == Precision.BF16 ? DType.BF16 : DType.F32;
      assertEquals(activations, dtypes.get("block_0"), "residual stream dtype");
      assertEquals(DType.F32, dtypes.get("temb"), "the time embedding stays F32");
      assertEquals(DType.F32, out.dtype(), "the prediction is F32");
      return gpu.download(out);
    }
  }

  @Test
  void ditOutputWithinBf16AndF32Bounds() {
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-tiny-expected").resolve("dit.safetensors"))) {
      Tensor expected = rec.load("out");
      double bf16 = RelativeL2.of(forward(Gpu.bf16(), DType.BF16, rec), expected);
      Tensor f32 = forward(Gpu.backend(), DType.F32, rec);
      float[] a = f32.toFloatArray(), e = expected.toFloatArray();
      double maxAbs = 0;
      for (int i = 0; i < a.length; i++) {
        maxAbs = Math.max(maxAbs, Math.abs(a[i] - e[i]));
      }
      double f32Bound =
          WanCards.cardFor(DiffusersDirectory.open(GOLDEN.resolve("wan21-tiny")))
              .parity()
              .tolerance("dit")
              .bound();
      System.out.printf(
          "  dit/out BF16 mode: rel L2 %.2e (bound 1e-2); F32 mode: max abs %.2e"
              + " (the card's bound %.0e)%n",
          bf16, maxAbs, f32Bound);
      assertTrue(bf16 <= 1e-2, "BF16 relative L2 " + bf16);
      assertTrue(maxAbs <= f32Bound, "F32 max abs " + maxAbs);
    }
  }
}
