package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The training backward's own kernels against the SPI's compositions on the CPU, each within 1e-5
 * relative L2 (F32 arithmetic in another order, a norm's statistics in double): the norms' row
 * kernels ({@code Backend.layerNormBackward}, {@code rmsNormBackward}) — the input's, weight's and
 * bias's gradients of odd row lengths (below and above a block's 256 threads, not multiples of 32),
 * with and without a weight — and the tanh GELU's ({@code geluTanhBackward}), each of an F32 and of
 * a BF16 input (the same BF16 values on the CPU).
 */
@Tag("gpu")
class BackwardKernelsGpuTest {
  private static final CpuBackend CPU = new CpuBackend();
  private static final int[][] SHAPES = {{3, 5, 37}, {2, 300}, {1, 4, 1536}};

  @Test
  void theRowKernelsGiveTheCompositionsGradients() {
    CudaBackend gpu = Gpu.backend();
    int seed = 1;
    for (int[] shape : SHAPES) {
      int n = shape[shape.length - 1];
      for (DType dtype : new DType[] {DType.F32, DType.BF16}) {
        // The input as the GPU holds it, and the same values on the host.
        Tensor x = gpu.upload(RandomWeights.uniform(seed++, 2f, shape), dtype);
        Tensor xHost = gpu.download(x);
        Tensor g = RandomWeights.uniform(seed++, 1f, shape);
        Tensor w = RandomWeights.uniform(seed++, 1f, n), b = RandomWeights.uniform(seed++, 1f, n);
        String what = dtype + " " + java.util.Arrays.toString(shape);
        for (Tensor weight : new Tensor[] {w, null}) {
          Tensor bias = weight == null ? null : b;
          Backend.NormGradients want =
              CPU.layerNormBackward(g, xHost, weight, bias, 1e-6f, true, true, true);
          Backend.NormGradients got =
              gpu.layerNormBackward(
                  gpu.upload(g, DType.F32),
                  x,
                  weight == null ? null : gpu.upload(weight, DType.F32),
                  bias == null ? null : gpu.upload(bias, DType.F32),
                  1e-6f,
                  true,
                  true,
                  true);
          close("layerNorm dx " + what, gpu, got.input(), want.input());
          close("layerNorm dw " + what, gpu, got.weight(), want.weight());
          close("layerNorm db " + what, gpu, got.bias(), want.bias());
          want = CPU.rmsNormBackward(g, xHost, weight, 1e-6f, true, true);
          got =
              gpu.rmsNormBackward(
                  gpu.upload(g, DType.F32),
                  x,
                  weight == null ? null : gpu.upload(weight, DType.F32),
                  1e-6f,
                  true,
                  true);
          close("rmsNorm dx " + what, gpu, got.input(), want.input());
          close("rmsNorm dw " + what, gpu, got.weight(), want.weight());
          assertNull(got.bias());
        }
      }
    }
  }

  /** Only what is asked for is computed: no input gradient, the weight's alone. */
  @Test
  void aWeightAloneIsTheWeightsGradient() {
    CudaBackend gpu = Gpu.backend();
    Tensor x = RandomWeights.uniform(50, 2f, 4, 96), g = RandomWeights.uniform(51, 1f, 4, 96);
    Tensor w = RandomWeights.uniform(52, 1f, 96);
    Backend.NormGradients got =
        gpu.rmsNormBackward(
            gpu.upload(g, DType.F32),
            gpu.upload(x, DType.F32),
            gpu.upload(w, DType.F32),
            1e-6f,
            false,
            true);
    assertNull(got.input());
    close(
        "rmsNorm dw alone",
        gpu,
        got.weight(),
        CPU.rmsNormBackward(g, x, w, 1e-6f, true, true).weight());
  }

  @Test
  void theTanhGelusBackwardIsTheCompositions() {
    CudaBackend gpu = Gpu.backend();
    for (DType dtype : new DType[] {DType.F32, DType.BF16}) {
      Tensor x = gpu.upload(RandomWeights.uniform(60, 4f, 3, 7, 333), dtype);
      Tensor g = RandomWeights.uniform(61, 1f, 3, 7, 333);
      close(
          "geluTanh dx " + dtype,
          gpu,
          gpu.geluTanhBackward(gpu.upload(g, DType.F32), x),
          CPU.geluTanhBackward(g, gpu.download(x)));
    }
  }

  private static void close(String what, CudaBackend gpu, Tensor got, Tensor want) {
    if (want == null) {
      assertNull(got, what);
      return;
    }
    double error = RelativeL2.of(gpu.download(got), want);
    System.out.printf("  %s: rel L2 %.2e%n", what, error);
    assertTrue(error <= 1e-5, what + ": relative L2 " + error);
  }
}
