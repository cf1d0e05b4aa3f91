package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.ResidualNorm;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fused operations and the BF16 activations of {@link Precision#BF16} against the CPU's
 * compositions, in both precisions. Inputs are BF16-representable, so both sides see the same
 * values. Bounds: an F32 result within 1e-5 of the reference's largest magnitude (summation order,
 * transcendental implementations); a BF16 result within one BF16 rounding of each value (2^-8
 * relative: half an ulp of 8 significant bits, with margin for a value near a power of two) plus
 * the same 1e-5.
 */
@Tag("gpu")
class FusedOpsGpuTest {
  private static final CpuBackend CPU = new CpuBackend(2);
  private static final double F32_TOL = 1e-5;
  private static final double BF16_ROUNDING = 1.0 / 256;

  /** Uniform in [-scale, scale], rounded to BF16 values, as F32. */
  private static Tensor rand(long seed, float scale, int... shape) {
    return RandomWeights.uniform(seed, scale, shape).toHost(DType.BF16).toHost(DType.F32);
  }

  private static List<CudaBackend> backends() {
    return List.of(Gpu.backend(), Gpu.bf16());
  }

  /**
   * Runs {@code op} on the CPU and on {@code gpu} (each uploads activations in its {@link
   * Backend#activationDType()}), checks the GPU result's dtype and values.
   */
  private static void same(
      String what, CudaBackend gpu, DType resultType, Function<Backend, Tensor> op) {
    Tensor expected = CPU.download(op.apply(CPU));
    Tensor device = op.apply(gpu);
    String label = what + " (" + gpu.precision() + " mode)";
    assertEquals(resultType, device.dtype(), label + ": result dtype");
    Tensor actual = gpu.download(device);
    assertArrayEquals(expected.shape(), actual.shape(), label + ": shape");
    float[] e = expected.toFloatArray(), a = actual.toFloatArray();
    double scale = 1e-30;
    for (float v : e) {
      scale = Math.max(scale, Math.abs(v));
    }
    double relative = resultType == DType.BF16 ? BF16_ROUNDING : 0;
    double worst = 0;
    for (int i = 0; i < e.length; i++) {
      double excess = Math.abs(a[i] - e[i]) - relative * Math.abs(e[i]);
      worst = Math.max(worst, Double.isNaN(excess) ? Double.POSITIVE_INFINITY : excess);
    }
    System.out.printf(
        "  %-44s excess over the bf16 rounding / max|ref| = %.2e (bound %.0e)%n",
        label, worst / scale, F32_TOL);
    assertTrue(worst <= F32_TOL * scale, label + ": excess " + worst + " vs scale " + scale);
  }

  private static Tensor act(Backend b, Tensor t) {
    return b.upload(t, b.activationDType());
  }

  private static Tensor f32(Backend b, Tensor t) {
    return b.upload(t, DType.F32);
  }

  // 96: rows move in 16-byte packs; 94: element by element (not a multiple of a pack).
  @ParameterizedTest
  @ValueSource(ints = {96, 94})
  void modulatedLayerNormMatchesTheComposition(int width) {
    Tensor x = rand(1, 2f, 2, 37, width);
    Tensor table = rand(2, 0.5f, 2, 6, width);
    Tensor flat = rand(3, 0.5f, 2, width);
    Tensor full = rand(4, 0.5f, 2, width, 37);
    for (CudaBackend gpu : backends()) {
      DType t = gpu.activationDType();
      same(
          "modulatedLayerNorm, [B, 1, D] slices",
          gpu,
          t,
          b -> {
            Tensor mod = f32(b, table);
            return b.modulatedLayerNorm(act(b, x), mod.slice(1, 3, 4), mod.slice(1, 4, 5), 1e-6f);
          });
      same(
          "modulatedLayerNorm, [D] vectors",
          gpu,
          t,
          b -> {
            Tensor v = f32(b, flat);
            return b.modulatedLayerNorm(act(b, x), v.select(0, 0), v.select(0, 1), 1e-6f);
          });
      same(
          "modulatedLayerNorm, transposed full vectors",
          gpu,
          t,
          b -> {
            Tensor v = f32(b, full).transpose(1, 2);
            return b.modulatedLayerNorm(act(b, x), v, b.affine(v, 0.5f, 0f), 1e-6f);
          });
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {96, 94})
  void gatedResidualMatchesTheComposition(int width) {
    Tensor x = rand(5, 2f, 2, 37, width), y = rand(6, 2f, 2, 37, width);
    Tensor table = rand(7, 1f, 2, 6, width);
    for (CudaBackend gpu : backends()) {
      same(
          "gatedResidual",
          gpu,
          gpu.activationDType(),
          b -> b.gatedResidual(act(b, x), act(b, y), f32(b, table).slice(1, 2, 3)));
      // The residual stream's dtype decides (diffusers' type_as(hidden_states)).
      same(
          "gatedResidual of an F32 stream",
          gpu,
          DType.F32,
          b -> b.gatedResidual(f32(b, x), act(b, y), f32(b, table).slice(1, 5, 6)));
    }
  }

  /** A fused residual norm and its composition of unfused ops, over one backend's operands. */
  private record ResidualCase(
      String name,
      Function<Backend, ResidualNorm> fused,
      Function<Backend, ResidualNorm> unfused) {}

  /**
   * The fused residual update and norm against the CPU's composition (the updated stream, and in
   * the F32 mode the norm too), and bit for bit against the same GPU's unfused kernels in both
   * modes (so the BF16 norm reads the stream exactly as stored).
   */
  @ParameterizedTest
  @ValueSource(ints = {96, 94})
  void residualLayerNormMatchesTheUnfusedKernels(int width) {
    Tensor x = rand(31, 2f, 2, 37, width), y = rand(32, 2f, 2, 37, width);
    Tensor table = rand(33, 0.5f, 2, 6, width);
    Tensor nw = rand(34, 1f, width), nb = rand(35, 1f, width);
    // A block's case: gate, shift and scale are slices of one modulation tensor.
    Function<Backend, Tensor> gate = b -> f32(b, table).slice(1, 2, 3);
    Function<Backend, Tensor> shift = b -> f32(b, table).slice(1, 3, 4);
    Function<Backend, Tensor> scale = b -> f32(b, table).slice(1, 4, 5);
    List<ResidualCase> cases =
        List.of(
            new ResidualCase(
                "gated, modulated",
                b ->
                    b.residualModulatedLayerNorm(
                        act(b, x), act(b, y), gate.apply(b), shift.apply(b), scale.apply(b), 1e-6f),
                b -> {
                  Tensor r = b.gatedResidual(act(b, x), act(b, y), gate.apply(b));
                  return new ResidualNorm(
                      r, b.modulatedLayerNorm(r, shift.apply(b), scale.apply(b), 1e-6f));
                }),
            new ResidualCase(
                "added, modulated",
                b ->
                    b.residualModulatedLayerNorm(
                        act(b, x), act(b, y), null, shift.apply(b), scale.apply(b), 1e-6f),
                b -> {
                  Tensor r = b.add(act(b, x), act(b, y));
                  return new ResidualNorm(
                      r, b.modulatedLayerNorm(r, shift.apply(b), scale.apply(b), 1e-6f));
                }),
            new ResidualCase(
                "gated, affine",
                b ->
                    b.residualLayerNorm(
                        act(b, x), act(b, y), gate.apply(b), f32(b, nw), f32(b, nb), 1e-6f),
                b -> {
                  Tensor r = b.gatedResidual(act(b, x), act(b, y), gate.apply(b));
                  return new ResidualNorm(r, b.layerNorm(r, f32(b, nw), f32(b, nb), 1e-6f));
                }),
            new ResidualCase(
                "added, no affine",
                b -> b.residualLayerNorm(act(b, x), act(b, y), null, null, null, 1e-6f),
                b -> {
                  Tensor r = b.add(act(b, x), act(b, y));
                  return new ResidualNorm(r, b.layerNorm(r, null, null, 1e-6f));
                }));
    for (CudaBackend gpu : backends()) {
      DType t = gpu.activationDType();
      for (ResidualCase c : cases) {
        String name = "residual norm (" + c.name() + ")";
        same(name + ": stream", gpu, t, b -> c.fused().apply(b).residual());
        if (t == DType.F32) {
          same(name + ": norm", gpu, t, b -> c.fused().apply(b).normed());
        }
        ResidualNorm fused = c.fused().apply(gpu), unfused = c.unfused().apply(gpu);
        String label = name + " (" + gpu.precision() + " mode)";
        assertArrayEquals(
            gpu.download(unfused.residual()).toFloatArray(),
            gpu.download(fused.residual()).toFloatArray(),
            label + ": stream differs from the unfused kernel's");
        assertArrayEquals(
            gpu.download(unfused.normed()).toFloatArray(),
            gpu.download(fused.normed()).toFloatArray(),
            label + ": norm differs from the unfused kernel's");
      }
    }
  }

  /**
   * Stacked projections (q, k, v of one input) against the CPU's per-layer linears, with and
   * without biases, at a width whose weight slices are not 256-byte aligned.
   */
  @ParameterizedTest
  @ValueSource(ints = {64, 40})
  void linearStackedMatchesEachLinear(int width) {
    Tensor x = rand(36, 1f, 2, 37, width);
    Tensor w = rand(37, 1f, 3, width, width), bias = rand(38, 1f, 3, width);
    for (CudaBackend gpu : backends()) {
      for (int i = 0; i < 3; i++) {
        int layer = i;
        same(
            "linearStacked, layer " + i + ", width " + width,
            gpu,
            gpu.activationDType(),
            b ->
                b.linearStacked(act(b, x), b.upload(w, DType.BF16), b.upload(bias, DType.BF16))
                    .get(layer));
        same(
            "linearStacked without bias, layer " + i + " of 2..3",
            gpu,
            gpu.activationDType(),
            b ->
                b.linearStacked(act(b, x), b.upload(w, DType.BF16).slice(0, 1, 3), null)
                    .get(layer == 0 ? 0 : 1));
      }
    }
  }

  @Test
  void linearGeluTanhMatchesTheComposition() {
    Tensor x = rand(8, 1f, 2, 37, 64), w = rand(9, 1f, 48, 64), bias = rand(10, 1f, 48);
    for (CudaBackend gpu : backends()) {
      same(
          "linearGeluTanh, BF16 weights",
          gpu,
          gpu.activationDType(),
          b -> b.linearGeluTanh(act(b, x), b.upload(w, DType.BF16), b.upload(bias, DType.BF16)));
      same(
          "linearGeluTanh, no bias",
          gpu,
          gpu.activationDType(),
          b -> b.linearGeluTanh(act(b, x), b.upload(w, DType.BF16), null));
      // F32 activations: in the BF16 mode this is cuBLASLt's GELU epilogue at F32 output, so the
      // tight bound checks its formula (tanh approximation) against the CPU's.
      same(
          "linearGeluTanh, F32 activations",
          gpu,
          DType.F32,
          b -> b.linearGeluTanh(f32(b, x), b.upload(w, DType.BF16), f32(b, bias)));
    }
  }

  @Test
  void activationOpsKeepBf16InTheBf16Mode() {
    Tensor x = rand(11, 2f, 2, 9, 3, 32), w = rand(12, 1f, 40, 96), bias = rand(13, 1f, 40);
    Tensor nw = rand(14, 1f, 96), nb = rand(15, 1f, 96);
    Tensor cos = rand(16, 1f, 9, 16), sin = rand(17, 1f, 9, 16);
    Tensor xt = rand(21, 2f, 2, 3, 9, 32), row = rand(22, 1f, 9, 32);
    for (CudaBackend gpu : backends()) {
      DType t = gpu.activationDType();
      same(
          "linear",
          gpu,
          t,
          b ->
              b.linear(
                  act(b, x).reshape(2, 9, 96),
                  b.upload(w, DType.BF16),
                  b.upload(bias, DType.BF16)));
      same(
          "layerNorm",
          gpu,
          t,
          b -> b.layerNorm(act(b, x).reshape(2, 9, 96), f32(b, nw), f32(b, nb), 1e-6f));
      same(
          "rmsNorm across heads",
          gpu,
          t,
          b -> b.rmsNorm(act(b, x).reshape(2, 9, 96), f32(b, nw), 1e-6f));
      same("rope", gpu, t, b -> b.rope(act(b, x), f32(b, cos), f32(b, sin)));
      // Head dim 20: 10 pairs, not a whole number of BF16 packs per head.
      same(
          "rope, head dim 20",
          gpu,
          t,
          b ->
              b.rope(
                  act(b, x).slice(3, 0, 20),
                  f32(b, cos).slice(1, 0, 10),
                  f32(b, sin).slice(1, 0, 10)));
      same(
          "rmsNorm, width 30",
          gpu,
          t,
          b -> b.rmsNorm(act(b, x).reshape(54, 32).slice(1, 0, 30), null, 1e-6f));
      same("add of dense tensors", gpu, t, b -> b.add(act(b, x), act(b, x)));
      same(
          "rmsNormRope",
          gpu,
          t,
          b ->
              b.rmsNormRope(
                  act(b, x).reshape(2, 9, 96), f32(b, nw), 1e-6f, 3, f32(b, cos), f32(b, sin)));
      same(
          "rmsNormRope, head dim 20",
          gpu,
          t,
          b ->
              b.rmsNormRope(
                  act(b, x).reshape(2, 9, 96).slice(2, 0, 60),
                  f32(b, nw).slice(0, 0, 60),
                  1e-6f,
                  3,
                  f32(b, cos).slice(1, 0, 10),
                  f32(b, sin).slice(1, 0, 10)));
      same("gelu tanh", gpu, t, b -> b.gelu(act(b, x), true));
      same("add of strided views", gpu, t, b -> b.add(act(b, x), act(b, xt).transpose(1, 2)));
      // A dense block repeated along the leading dims (a learned table over batch and sequence):
      // the periodic kernel, either operand repeating.
      Tensor block = rand(28, 1f, 3, 32);
      same(
          "add of a repeated block",
          gpu,
          t,
          b -> b.add(act(b, x), act(b, block).reshape(1, 1, 3, 32)));
      same(
          "sub from a repeated block",
          gpu,
          t,
          b -> b.sub(act(b, block).reshape(1, 1, 3, 32), act(b, x)));
      same(
          "add of an F32 table and a BF16 or F32 embedding",
          gpu,
          DType.F32,
          b -> b.add(f32(b, block).reshape(1, 1, 3, 32), act(b, x)));
      // In the BF16 mode the mixed kernel reads both as they are; the order of a sub's operands
      // must survive it.
      same("add of a BF16 and an F32 tensor", gpu, DType.F32, b -> b.add(act(b, x), f32(b, x)));
      Tensor y = rand(29, 2f, 2, 9, 3, 32);
      same("sub of a BF16 from an F32 tensor", gpu, DType.F32, b -> b.sub(f32(b, y), act(b, x)));
      same("mul broadcast", gpu, t, b -> b.mul(act(b, x), act(b, row).reshape(1, 9, 1, 32)));
    }
  }

  @Test
  void channelNormMatchesTheComposition() {
    // [B, C, T, H, W] with 7 channels; gamma [C, 1, 1, 1] as the VAE stores it.
    Tensor x = rand(23, 2f, 2, 7, 3, 5, 6), gamma = rand(24, 2f, 7, 1, 1, 1);
    for (CudaBackend gpu : backends()) {
      DType t = gpu.activationDType();
      same(
          "channelNorm",
          gpu,
          t,
          b -> b.channelNorm(act(b, x), b.upload(gamma, DType.BF16), 1e-12f, false, t));
      same(
          "channelNorm + SiLU",
          gpu,
          t,
          b -> b.channelNorm(act(b, x), b.upload(gamma, DType.BF16), 1e-12f, true, t));
      // The VAE's mixed precision: an F32 stream normalised into a BF16 convolution input.
      same(
          "channelNorm + SiLU, F32 into BF16",
          gpu,
          DType.BF16,
          b -> b.channelNorm(f32(b, x), f32(b, gamma), 1e-12f, true, DType.BF16));
      same(
          "channelNorm, BF16 into F32",
          gpu,
          DType.F32,
          b -> b.channelNorm(b.upload(x, DType.BF16), f32(b, gamma), 1e-12f, false, DType.F32));
      same("l2Normalize", gpu, t, b -> b.l2Normalize(act(b, x), 1, 1e-12f));
      same("l2Normalize dim 2", gpu, t, b -> b.l2Normalize(act(b, x), 2, 1e-12f));
      // Two remembered frames, then the normalised chunk: a causal convolution's input.
      Tensor past = rand(27, 2f, 2, 7, 2, 5, 6);
      same(
          "channelNormAfter + SiLU",
          gpu,
          t,
          b ->
              b.channelNormAfter(
                  act(b, past), act(b, x), b.upload(gamma, DType.BF16), 1e-12f, true, t));
      same(
          "channelNormAfter, F32 past",
          gpu,
          t,
          b ->
              b.channelNormAfter(
                  f32(b, past), act(b, x), b.upload(gamma, DType.BF16), 1e-12f, false, t));
      same(
          "channelNormAfter + SiLU, F32 into BF16 after a BF16 past",
          gpu,
          DType.BF16,
          b ->
              b.channelNormAfter(
                  b.upload(past, DType.BF16), f32(b, x), f32(b, gamma), 1e-12f, true, DType.BF16));
    }
  }

  @Test
  void dataMovementKeepsBf16InTheBf16Mode() {
    Tensor a = rand(25, 2f, 1, 4, 2, 3, 5), c = rand(26, 2f, 1, 4, 3, 3, 5);
    for (CudaBackend gpu : backends()) {
      DType t = gpu.activationDType();
      same("concat", gpu, t, b -> b.concat(List.of(act(b, a), act(b, c)), 2));
      same(
          "concat of mixed dtypes",
          gpu,
          DType.F32,
          b -> b.concat(List.of(act(b, a), f32(b, c)), 2));
      same("upsampleNearest2d", gpu, t, b -> b.upsampleNearest2d(act(b, c), 2, 2));
      // The expanded kernels: a source read once per value, stored at each of its replicas.
      same(
          "contiguous of a batch repeat",
          gpu,
          t,
          b -> b.contiguous(act(b, a).expand(3, 4, 2, 3, 5)));
      same(
          "upsampleNearest2d (2, 3) of a strided F32 view",
          gpu,
          DType.F32,
          b -> b.upsampleNearest2d(f32(b, c).slice(3, 1, 3), 2, 3));
    }
  }

  /**
   * The Wan2.2 decoder's duplicate-up sum: a dense stage output plus its input repeated over {@code
   * t × s × s} blocks (the expanded kernel's replicas), each output channel reading its own input
   * channel, or two reading one each over the block's time digit (an own dim of the view); either
   * operand order, and an expanded BF16 view widened for an F32 operand.
   */
  @Test
  void anExpandedOperandMatchesTheComposition() {
    Tensor x = rand(30, 2f, 1, 4, 3, 5, 6);
    Tensor h = rand(31, 2f, 1, 4, 3, 2, 5, 2, 6, 2);
    Tensor halves = rand(32, 2f, 1, 2, 3, 2, 5, 2, 6, 2);
    for (CudaBackend gpu : backends()) {
      DType t = gpu.activationDType();
      same("add of a duplicated-up view", gpu, t, b -> b.add(act(b, h), duplicatedUp(act(b, x))));
      same(
          "sub from a view whose time digit picks the channel",
          gpu,
          t,
          b ->
              b.sub(
                  act(b, x)
                      .reshape(1, 2, 2, 3, 5, 6)
                      .permute(0, 1, 3, 2, 4, 5)
                      .unsqueeze(5)
                      .unsqueeze(7)
                      .expand(1, 2, 3, 2, 5, 2, 6, 2),
                  act(b, halves)));
      same(
          "mul of an F32 tensor and an expanded BF16 view",
          gpu,
          DType.F32,
          b -> b.mul(f32(b, h), duplicatedUp(act(b, x))));
    }
  }

  /** x [1, 4, 3, 5, 6] repeated over 2 × 2 × 2 blocks: [1, 4, 3, 2, 5, 2, 6, 2]. */
  private static Tensor duplicatedUp(Tensor x) {
    return x.reshape(1, 4, 3, 1, 5, 1, 6, 1).expand(1, 4, 3, 2, 5, 2, 6, 2);
  }

  @Test
  void attentionOutputKeepsBf16InTheBf16Mode() {
    Tensor q = rand(18, 2f, 1, 130, 2, 64), k = rand(19, 2f, 1, 77, 2, 64);
    Tensor v = rand(20, 1f, 1, 77, 2, 64);
    for (CudaBackend gpu : backends()) {
      Tensor out = gpu.attention(act(gpu, q), act(gpu, k), act(gpu, v), null, 0.125f);
      assertEquals(gpu.activationDType(), out.dtype(), "attention output dtype");
      double err = RelativeL2.of(gpu.download(out), CPU.attention(q, k, v, null, 0.125f));
      System.out.printf("  attention (%s mode): rel L2 %.2e (bound 1e-2)%n", gpu.precision(), err);
      assertTrue(err <= 1e-2, "attention relative L2 " + err);
    }
  }
}
