package dev.stepweave.bench;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.autograd.Gradients;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.autograd.Tape;
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
 * Self-attention recorded and differentiated on the CPU, as a training step of the embedded
 * default's DiT runs it (4 heads of 32, batch 8): 144 tokens (1×4×4 patches of a 9×16×16 latent,
 * the shipped recipe) and 576 (1×2×2 patches). JMH reports milliseconds per forward + backward.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-XX:+UseParallelGC"})
public class AttentionBackwardBenchmark {
  private static final int BATCH = 8;
  private static final int HEADS = 4;
  private static final int HEAD_DIM = 32;

  /** Tokens per sample. */
  @Param({"144", "576"})
  public int tokens;

  private RecordingBackend backend;
  private Tensor q;
  private Tensor k;
  private Tensor v;
  private float[] seed;

  @Setup
  public void setUp() {
    backend = new RecordingBackend(new CpuBackend(2));
    SplittableRandom random = new SplittableRandom(1);
    q = random(random);
    k = random(random);
    v = random(random);
    seed = new float[BATCH * tokens * HEADS * HEAD_DIM];
    for (int i = 0; i < seed.length; i++) {
      seed[i] = (float) (random.nextDouble() - 0.5);
    }
  }

  private Tensor random(SplittableRandom random) {
    float[] x = new float[BATCH * tokens * HEADS * HEAD_DIM];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) (random.nextDouble() * 2 - 1);
    }
    return Tensor.of(x, BATCH, tokens, HEADS, HEAD_DIM);
  }

  @Benchmark
  public Gradients forwardAndBackward() {
    Tape tape = new Tape();
    tape.track(q);
    tape.track(k);
    tape.track(v);
    Tensor out =
        backend.recording(
            tape, () -> backend.attention(q, k, v, null, (float) (1 / Math.sqrt(HEAD_DIM))));
    return tape.backward(out, seed);
  }
}
