package dev.stepweave.bench;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * F32 {@code linear} (x[M,K]·W[N,K]ᵀ) at 1024³ and at the Wan2.1-1.3B DiT shapes. JMH reports
 * seconds per call; GFLOP/s = 2·M·N·K / 1e9 / (s/op), printed by {@link GemmFlops}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(
    value = 1,
    jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-XX:+UseParallelGC"})
public class GemmBenchmark {

  /**
   * {@code M x N x K}: the cube, qkv/out projection, FFN up, FFN down and the text projection of
   * Wan2.1-1.3B (dim 1536, ffn 8960, text_dim 4096) at 2048 video tokens.
   */
  @Param({"1024x1024x1024", "2048x1536x1536", "2048x8960x1536", "2048x1536x8960", "512x1536x4096"})
  public String shape;

  /** Worker threads; 0 means every core. */
  @Param({"1", "0"})
  public int threads;

  private CpuBackend cpu;
  private Tensor x;
  private Tensor w;

  @Setup
  public void setUp() {
    int[] mnk = GemmFlops.parse(shape);
    cpu = threads == 0 ? new CpuBackend() : new CpuBackend(threads);
    SplittableRandom random = new SplittableRandom(1);
    x = randomTensor(random, mnk[0], mnk[2]);
    w = randomTensor(random, mnk[1], mnk[2]);
  }

  private static Tensor randomTensor(SplittableRandom random, int rows, int cols) {
    float[] v = new float[rows * cols];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (random.nextDouble() - 0.5);
    }
    return Tensor.of(v, rows, cols);
  }

  @Benchmark
  public Tensor linear() {
    return cpu.linear(x, w, null);
  }
}
