package dev.stepweave.bench;

import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.core.runtime.ProgramCheckpoint;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the server's checkpoint file of a denoising job costs to write ({@link
 * ProgramCheckpoint#write}: safetensors to a temp file, renamed into place), which sets {@code
 * serve --checkpoint-interval} (docs/server.md). The state is shaped as a Wan2.1 denoise loop's
 * checkpoint: the finished text encoding (prompt and negative embeddings, 512 × 4096 each) and the
 * loop's state (the latents and two sampler history entries of the latents' shape). {@code 480p} is
 * 832×480×81 (latents 16×21×60×104), {@code tiny} is the embedded model's 32×32×5 job (latents
 * 16×2×4×4, embeddings 16 × 32). Written to {@code java.io.tmpdir}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class CheckpointWriteBenchmark {
  @Param({"tiny", "480p"})
  public String state;

  private Path dir;
  private Path file;
  private ProgramCheckpoint checkpoint;

  @Setup
  public void setUp() throws IOException {
    SplittableRandom random = new SplittableRandom(1);
    int[] latents =
        state.equals("480p") ? new int[] {1, 16, 21, 60, 104} : new int[] {1, 16, 2, 4, 4};
    int[] text = state.equals("480p") ? new int[] {1, 512, 4096} : new int[] {1, 16, 32};
    LoopResult encoded =
        new LoopResult(
            Map.of("prompt_embeds", random(random, text), "negative_embeds", random(random, text)),
            List.of());
    SerializedState denoise =
        new SerializedState(
            "denoise",
            Map.of(
                "latents", random(random, latents),
                "history0", random(random, latents),
                "history1", random(random, latents)),
            "{\"step\":10}");
    checkpoint = new ProgramCheckpoint("bench", Map.of("text_encode", encoded), denoise);
    dir = Files.createTempDirectory("checkpoint-bench");
    file = dir.resolve("job.checkpoint");
  }

  private static Tensor random(SplittableRandom random, int[] shape) {
    int n = 1;
    for (int d : shape) {
      n *= d;
    }
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) random.nextGaussian();
    }
    return Tensor.of(v, shape);
  }

  @Benchmark
  public Path write() {
    checkpoint.write(file);
    return file;
  }

  @TearDown
  public void tearDown() throws IOException {
    Files.deleteIfExists(file);
    Files.deleteIfExists(dir);
  }
}
