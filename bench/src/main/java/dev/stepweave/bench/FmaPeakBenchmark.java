package dev.stepweave.bench;

import java.util.concurrent.TimeUnit;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The machine's sustained F32 FMA throughput on one core: 12 independent vector FMA chains (more
 * than latency × pipes), no memory traffic. One op is {@link #FMAS_PER_OP} vector FMAs, so GFLOP/s
 * = ops/s × FMAS_PER_OP × 2 × lanes / 1e9. Run with {@code -t 2} for both cores.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(
    value = 1,
    jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class FmaPeakBenchmark {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int ITERATIONS = 1_000_000;

  /** Vector FMAs per benchmark op. */
  public static final long FMAS_PER_OP = 12L * ITERATIONS;

  public float multiplier = 0.999999f;
  public float addend = 1e-7f;

  @Benchmark
  public float fmaChains() {
    FloatVector m = FloatVector.broadcast(S, multiplier);
    FloatVector c = FloatVector.broadcast(S, addend);
    FloatVector a0 = FloatVector.broadcast(S, 1f), a1 = a0.add(1), a2 = a0.add(2);
    FloatVector a3 = a0.add(3), a4 = a0.add(4), a5 = a0.add(5), a6 = a0.add(6);
    FloatVector a7 = a0.add(7), a8 = a0.add(8), a9 = a0.add(9), a10 = a0.add(10);
    FloatVector a11 = a0.add(11);
    for (int i = 0; i < ITERATIONS; i++) {
      a0 = a0.fma(m, c);
      a1 = a1.fma(m, c);
      a2 = a2.fma(m, c);
      a3 = a3.fma(m, c);
      a4 = a4.fma(m, c);
      a5 = a5.fma(m, c);
      a6 = a6.fma(m, c);
      a7 = a7.fma(m, c);
      a8 = a8.fma(m, c);
      a9 = a9.fma(m, c);
      a10 = a10.fma(m, c);
      a11 = a11.fma(m, c);
    }
    return a0.add(a1)
        .add(a2)
        .add(a3)
        .add(a4)
        .add(a5)
        .add(a6)
        .add(a7)
        .add(a8)
        .add(a9)
        .add(a10)
        .add(a11)
        .reduceLanes(VectorOperators.ADD);
  }
}
