package dev.stepweave.cuda.cudnn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.Gpu;
import dev.stepweave.cuda.RelativeL2;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * cuDNN's convolution (BF16 mode) against the CPU's F32 conv3d at the shapes the Wan models use,
 * small.
 *
 * <p>Bound: relative L2 ≤ 1e-2, the BF16 mode's bound. Input and filter are rounded to BF16
 * (relative error ≤ 2⁻⁹ each, independent per element, so a product sum of random terms carries
 * about 2⁻⁹·√2/√3 ≈ 1.6e-3 relative), accumulation is F32, and the output is rounded to BF16 once
 * more (≤ 2⁻⁹, ≈ 1.1e-3 in L2): a few 1e-3 in all, so 1e-2 leaves room without hiding a wrong
 * result (a wrong stride, padding or filter layout gives errors of order 1).
 */
@Tag("gpu")
class CudnnConvolutionGpuTest {
  private static final CpuBackend CPU = new CpuBackend(2);

  /** One case: x dims, filter dims, stride, padding, whether it has a bias. */
  private record Case(String what, int[] x, int[] w, int[] stride, int[] padding, boolean bias) {}

  private static final Case[] WAN_SHAPES = {
    new Case(
        "3x3x3 (VAE causal conv, time padded by the caller)",
        new int[] {1, 32, 5, 12, 10},
        new int[] {32, 32, 3, 3, 3},
        new int[] {1, 1, 1},
        new int[] {0, 1, 1},
        true),
    new Case(
        "3x3x3 pad 1",
        new int[] {2, 16, 4, 9, 8},
        new int[] {24, 16, 3, 3, 3},
        new int[] {1, 1, 1},
        new int[] {1, 1, 1},
        true),
    new Case(
        "1x3x3 pad (0,1,1) (VAE per-frame resample conv)",
        new int[] {1, 16, 3, 14, 18},
        new int[] {8, 16, 1, 3, 3},
        new int[] {1, 1, 1},
        new int[] {0, 1, 1},
        true),
    new Case(
        "1x1x1 (VAE shortcut), no bias",
        new int[] {2, 24, 4, 6, 7},
        new int[] {40, 24, 1, 1, 1},
        new int[] {1, 1, 1},
        new int[] {0, 0, 0},
        false),
    new Case(
        "(1,2,2) stride (1,2,2) (DiT patch embedding)",
        new int[] {1, 16, 3, 8, 12},
        new int[] {64, 16, 1, 2, 2},
        new int[] {1, 2, 2},
        new int[] {0, 0, 0},
        true),
  };

  @Test
  void matchesTheF32ReferenceWithinBf16RoundingAtTheWanShapes() {
    CudaBackend gpu = Gpu.bf16();
    int seed = 1;
    for (DType input : List.of(DType.BF16, DType.F32)) {
      for (Case c : WAN_SHAPES) {
        String path = check(gpu, c, input, seed += 3);
        assertTrue(path.startsWith("cuDNN"), c.what() + ": " + path);
      }
    }
  }

  /**
   * The VAE's mixed precision: BF16 input and filter, the result straight in F32. Against the CPU's
   * F32 convolution of the same BF16-rounded operands only the order of the F32 sums differs (about
   * 1e-7 relative), where a BF16 rounding of the result would add about 1e-3: the bound 1e-4 tells
   * the two apart.
   */
  @Test
  void bf16OperandsGiveAnUnroundedF32ResultAtTheWanShapes() {
    CudaBackend gpu = Gpu.bf16();
    int seed = 81;
    for (Case c : WAN_SHAPES) {
      Tensor host = RandomWeights.uniform(seed, 1f, c.x()).toHost(DType.BF16);
      Tensor w = RandomWeights.uniform(seed + 1, 0.2f, c.w());
      Tensor b = c.bias() ? RandomWeights.uniform(seed + 2, 0.5f, c.w()[0]) : null;
      seed += 3;
      Tensor x = gpu.upload(host, DType.BF16);
      Tensor wd = gpu.upload(w, DType.F32);
      Tensor bd = b == null ? null : gpu.upload(b, DType.F32);
      Tensor expected =
          CPU.conv3d(
              host.toHost(DType.F32),
              w.toHost(DType.BF16).toHost(DType.F32),
              b,
              c.stride(),
              c.padding());
      Tensor out = gpu.conv3d(x, wd, bd, c.stride(), c.padding(), DType.F32);
      double err = RelativeL2.of(gpu.download(out), expected);
      System.out.printf(
          "  conv3d %s, BF16 operands into F32: rel L2 %.2e (bound 1e-4)%n%s%n",
          c.what(), err, gpu.conv3dPaths().lines().filter(l -> l.contains("out F32")).toList());
      assertEquals(DType.F32, out.dtype(), c.what());
      assertArrayEquals(expected.shape(), out.shape());
      assertTrue(err <= 1e-4, c.what() + ": relative L2 " + err);
    }
  }

  @Test
  void oddSizesAreRightWhicheverPathRunsThem() {
    CudaBackend gpu = Gpu.bf16();
    // 3 input and 5 output channels, odd spatial sizes, mixed strides and paddings: rows of
    // 2-byte multiples only; cuDNN may take it (then BF16 out) or refuse it (then im2col, F32).
    Case odd =
        new Case(
            "odd sizes",
            new int[] {1, 3, 7, 9, 11},
            new int[] {5, 3, 3, 3, 3},
            new int[] {2, 1, 2},
            new int[] {1, 0, 1},
            true);
    check(gpu, odd, DType.BF16, 41);
    check(gpu, odd, DType.F32, 44);
  }

  /**
   * Runs one case on device F32 weights (the VAE's) and an {@code input}-typed device input, checks
   * it and returns the path. A BF16 input runs on BF16 data (bound 1e-2, above); an F32 one on F32
   * data, which cuDNN may compute in TF32 (inputs rounded to 10-bit mantissas, unit roundoff 2⁻¹¹):
   * bound 2e-3.
   */
  private static String check(CudaBackend gpu, Case c, DType input, int seed) {
    Tensor host = RandomWeights.uniform(seed, 1f, c.x());
    Tensor x = gpu.upload(host, input);
    Tensor w = RandomWeights.uniform(seed + 1, 0.2f, c.w());
    Tensor b = c.bias() ? RandomWeights.uniform(seed + 2, 0.5f, c.w()[0]) : null;
    Tensor wd = gpu.upload(w, DType.F32);
    Tensor bd = b == null ? null : gpu.upload(b, DType.F32);
    Tensor expected =
        CPU.conv3d(host.toHost(input).toHost(DType.F32), w, b, c.stride(), c.padding());
    String path = gpu.conv3dPath(x, wd, bd, c.stride(), c.padding());
    Tensor out = gpu.conv3d(x, wd, bd, c.stride(), c.padding());
    double err = RelativeL2.of(gpu.download(out), expected);
    // Again: the filter's BF16 copy now comes from the cache.
    double again =
        RelativeL2.of(gpu.download(gpu.conv3d(x, wd, bd, c.stride(), c.padding())), expected);
    double bound = input == DType.F32 ? 2e-3 : 1e-2;
    System.out.printf(
        "  conv3d %s, %s input: rel L2 %.2e (again %.2e, bound %.0e) via %s%n",
        c.what(), input, err, again, bound, path);
    assertArrayEquals(expected.shape(), out.shape());
    assertEquals(path.startsWith("cuDNN") ? input : DType.F32, out.dtype(), path);
    assertTrue(err <= bound, c.what() + ": relative L2 " + err);
    assertTrue(again <= bound, c.what() + ": relative L2 the second time " + again);
    return path;
  }

  @Test
  void cachedFilterCopiesSurviveTheScopeTheyWereMadeIn() {
    CudaBackend gpu = Gpu.bf16();
    Case c = WAN_SHAPES[0];
    Tensor host = RandomWeights.uniform(51, 1f, c.x());
    Tensor x = gpu.upload(host, DType.BF16); // BF16 data: the filter's BF16 copy is cached
    Tensor w = RandomWeights.uniform(52, 0.2f, c.w());
    Tensor b = RandomWeights.uniform(53, 0.5f, c.w()[0]);
    Tensor wd = gpu.upload(w, DType.F32), bd = gpu.upload(b, DType.F32);
    Tensor expected = CPU.conv3d(host, w, b, c.stride(), c.padding());
    try (MemoryScope scope = gpu.openScope()) {
      gpu.conv3d(x, wd, bd, c.stride(), c.padding());
      // Everything allocated in the scope goes back and is reused by what comes next.
      scope.releaseExcept();
    }
    // A BF16 tensor of the filter's size takes the block a scoped filter copy would have had.
    Tensor noise = gpu.upload(RandomWeights.uniform(54, 9f, c.w()), DType.BF16);
    Tensor out = gpu.conv3d(x, wd, bd, c.stride(), c.padding());
    double err = RelativeL2.of(gpu.download(out), expected);
    System.out.printf("  conv3d after a scope released: rel L2 %.2e (beside %s)%n", err, noise);
    assertTrue(err <= 1e-2, "relative L2 " + err);
  }

  @Test
  void bf16DeviceWeightsAndInputsPassWithoutCopies() {
    CudaBackend gpu = Gpu.bf16();
    Case c = WAN_SHAPES[4];
    Tensor x = RandomWeights.uniform(61, 1f, c.x());
    Tensor w = RandomWeights.uniform(62, 0.2f, c.w());
    Tensor b = RandomWeights.uniform(63, 0.5f, c.w()[0]);
    Tensor out =
        gpu.conv3d(
            gpu.upload(x, DType.BF16),
            gpu.upload(w, DType.BF16),
            gpu.upload(b, DType.BF16),
            c.stride(),
            c.padding());
    double err = RelativeL2.of(gpu.download(out), CPU.conv3d(x, w, b, c.stride(), c.padding()));
    System.out.printf("  conv3d of BF16 device tensors: rel L2 %.2e%n", err);
    assertEquals(DType.BF16, out.dtype());
    assertTrue(err <= 1e-2, "relative L2 " + err);
  }

  @Test
  void fallsBackCleanlyWhenCudnnRefusesAShape() {
    CudaBackend gpu = Gpu.bf16();
    Case c = WAN_SHAPES[2];
    // BF16 data, for which every variant (channels-last ones too) is a candidate.
    Tensor x = gpu.upload(RandomWeights.uniform(71, 1f, c.x()), DType.BF16);
    Tensor w = gpu.upload(RandomWeights.uniform(72, 0.2f, c.w()), DType.F32);
    Tensor b = gpu.upload(RandomWeights.uniform(73, 0.5f, c.w()[0]), DType.F32);
    // A cuDNN whose execution plans never finalize: every variant is refused. A refused
    // convolution touches no kernel, so none are given.
    try (CudnnRuntime refusing = new CudnnRuntime(gpu.context(), RefusingPlans::new);
        CudnnConvolution conv = new CudnnConvolution(gpu.tensors(), refusing)) {
      String path = conv.describe(x, w, b, c.stride(), c.padding(), DType.BF16);
      System.out.printf("  refused: %s%n", path);
      assertTrue(path.startsWith("not cuDNN"), path);
      for (CudnnConvolution.Variant v : CudnnConvolution.Variant.values()) {
        assertTrue(path.contains(v.label + ": "), "each variant tried: " + path);
      }
      assertNull(
          conv.conv3d(x, w, b, c.stride(), c.padding(), DType.BF16), "the caller runs im2col");
    }
    // The F32 mode never asks cuDNN, and the real cuDNN still takes the shape.
    assertEquals(
        "im2col + cuBLASLt F32 GEMM (F32 precision)",
        Gpu.backend().conv3dPath(x, w, b, c.stride(), c.padding()));
    assertTrue(gpu.conv3dPath(x, w, b, c.stride(), c.padding()).startsWith("cuDNN"));
    System.out.println("  conv3d paths so far:\n" + gpu.conv3dPaths().indent(4));
  }

  /** libcudnn, except that finalizing an execution plan fails as cuDNN does for no support. */
  private static final class RefusingPlans implements CudnnGraphApi {
    private static final int CUDNN_STATUS_NOT_SUPPORTED = 3000;
    private final CudnnGraphApi api;
    private final Map<Long, Integer> types = new HashMap<>();

    RefusingPlans(CudnnGraphApi api) {
      this.api = api;
    }

    @Override
    public long create(int descriptorType) {
      long d = api.create(descriptorType);
      types.put(d, descriptorType);
      return d;
    }

    @Override
    public void set(
        long descriptor, int attribute, int attributeType, long count, MemorySegment elements) {
      api.set(descriptor, attribute, attributeType, count, elements);
    }

    @Override
    public long get(
        long descriptor, int attribute, int attributeType, long requested, MemorySegment elements) {
      return api.get(descriptor, attribute, attributeType, requested, elements);
    }

    @Override
    public void finish(long descriptor) {
      if (Objects.equals(types.get(descriptor), Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)) {
        throw new CudaException(
            "cudnnBackendFinalize", CUDNN_STATUS_NOT_SUPPORTED, "refused by the test");
      }
      api.finish(descriptor);
    }

    @Override
    public void destroy(long descriptor) {
      types.remove(descriptor);
      api.destroy(descriptor);
    }
  }
}
