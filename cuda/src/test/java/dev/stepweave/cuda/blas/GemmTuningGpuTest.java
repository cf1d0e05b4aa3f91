package dev.stepweave.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.Gpu;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A GEMM large enough to tune is timed at its first call and computes the same product as the
 * heuristic's first algorithm would, within BF16 output rounding; a second {@link Gemm} over the
 * same folder (another process, in effect) takes the recorded choice without timing and computes
 * the same bits; a small GEMM and an accumulating one are not timed.
 */
@Tag("gpu")
class GemmTuningGpuTest {
  @TempDir Path choices;

  private static final int M = 2048, N = 2048, K = 1536; // 6.4 G multiply-adds, over the bar

  @Test
  void theFirstCallTimesTheCandidatesAndALaterGemmReadsTheChoice() {
    CudaBackend gpu = Gpu.backend();
    Tensor a = gpu.upload(RandomWeights.uniform(1, 1f, M, K), DType.BF16);
    Tensor b = gpu.upload(RandomWeights.uniform(2, 1f, N, K), DType.BF16);
    Tensor workspace =
        gpu.upload(Tensor.zeros(DType.F32, Math.toIntExact(Gemm.workspaceBytes() / 4)), DType.F32);
    Gemm.Shape big = shape(M, N, K);
    Gemm.Shape small = shape(64, 64, 64);

    Gemm first = new Gemm(gpu.context(), DeviceTensors.address(workspace), choices);
    Tensor c1 = gpu.upload(Tensor.zeros(DType.F32, M, N), DType.F32);
    first.run(big, addr(a), addr(b), addr(c1), 0L);
    Tensor cSmall = gpu.upload(Tensor.zeros(DType.F32, 64, 64), DType.F32);
    first.run(small, addr(a), addr(b), addr(cSmall), 0L);
    first.accumulate(shape(M, N, K), 1f, addr(a), addr(b), addr(c1)); // same key: already settled
    String paths = first.paths();
    System.out.println("  first Gemm:\n" + paths.indent(4));
    assertTrue(paths.contains("fastest of"), paths);
    assertTrue(paths.contains("too small to time"), paths);

    Gemm second = new Gemm(gpu.context(), DeviceTensors.address(workspace), choices);
    Tensor c2 = gpu.upload(Tensor.zeros(DType.F32, M, N), DType.F32);
    second.run(big, addr(a), addr(b), addr(c2), 0L);
    second.accumulate(shape(M, N, K), 1f, addr(a), addr(b), addr(c2));
    String later = second.paths();
    System.out.println("  second Gemm, same folder:\n" + later.indent(4));
    assertTrue(later.contains("on-disk choice"), later);
    assertArrayEquals(
        gpu.download(c1).toFloatArray(),
        gpu.download(c2).toFloatArray(),
        "the same algorithm gives the same bits");
    first.close();
    second.close();
  }

  @Test
  void anAccumulatingCallIsNeverTimed() {
    CudaBackend gpu = Gpu.backend();
    Tensor a = gpu.upload(RandomWeights.uniform(3, 1f, M, K), DType.BF16);
    Tensor b = gpu.upload(RandomWeights.uniform(4, 1f, N, K), DType.BF16);
    Tensor workspace =
        gpu.upload(Tensor.zeros(DType.F32, Math.toIntExact(Gemm.workspaceBytes() / 4)), DType.F32);
    Gemm gemm = new Gemm(gpu.context(), DeviceTensors.address(workspace), choices);
    Tensor c = gpu.upload(Tensor.zeros(DType.F32, M, N), DType.F32);
    gemm.accumulate(shape(M, N, K), 1f, addr(a), addr(b), addr(c));
    Tensor once = gpu.download(c);
    gemm.accumulate(shape(M, N, K), -1f, addr(a), addr(b), addr(c));
    String paths = gemm.paths();
    assertTrue(paths.contains("accumulating call is not timed"), paths);
    // C = 0 + ab − ab: zero up to rounding, not several products added by timing runs.
    float worst = 0, scale = 0;
    float[] after = gpu.download(c).toFloatArray(), mid = once.toFloatArray();
    for (int i = 0; i < after.length; i++) {
      worst = Math.max(worst, Math.abs(after[i]));
      scale = Math.max(scale, Math.abs(mid[i]));
    }
    assertTrue(worst <= 1e-5f * scale, "residue " + worst + " of " + scale);
    gemm.close();
  }

  /** Row-major A [m, k] times Bᵀ with B stored [n, k], BF16 in, F32 out. */
  private static Gemm.Shape shape(int m, int n, int k) {
    return new Gemm.Shape(
        m, n, k, false, k, true, k, n, 1, 0, 0, 0, 0, true, false, Gemm.Epilogue.NONE, m);
  }

  private static long addr(Tensor t) {
    return DeviceTensors.address(t);
  }
}
