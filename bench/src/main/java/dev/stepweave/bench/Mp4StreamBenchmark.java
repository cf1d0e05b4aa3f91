package dev.stepweave.bench;

import dev.stepweave.media.Mp4Stream;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
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
 * What writing the MP4 costs after a video's last frames arrive, as `generate` streams an 81-frame
 * 832×480 decode: the stream is fed its chunks (one frame, then four at a time) {@code paceMillis}
 * apart before each timed call, untimed; the timed call waits for the frames still being coded,
 * muxes and writes the file. JMH reports milliseconds per finish.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 7)
@Fork(
    value = 1,
    jvmArgsAppend = {"-XX:+UseParallelGC"})
public class Mp4StreamBenchmark {
  private static final int FRAMES = 81;
  private static final int HEIGHT = 480;
  private static final int WIDTH = 832;

  /**
   * Milliseconds between chunks: the time one VAE step takes to decode four frames where they are
   * coded (90 ms on the H100; 400 here lets a 2-core machine's coder keep up, as 16 cores do
   * there).
   */
  @Param({"400"})
  public long paceMillis;

  private Tensor video;
  private Path target;
  private Mp4Stream stream;

  @Setup
  public void setUp() throws IOException {
    float[] rgb = new float[FRAMES * HEIGHT * WIDTH * 3];
    SplittableRandom random = new SplittableRandom(1);
    // Bands that move a little each frame, with noise: what P-frames search for motion in.
    for (int i = 0; i < rgb.length; i++) {
      int f = i / (HEIGHT * WIDTH * 3);
      int x = (i / 3) % WIDTH;
      double value = 0.4 + 0.3 * Math.sin((x + 3 * f) * 0.05) + 0.03 * (random.nextDouble() - 0.5);
      rgb[i] = (float) Math.clamp(value, 0, 1);
    }
    video = Tensor.of(rgb, FRAMES, HEIGHT, WIDTH, 3);
    target = Files.createTempFile("mp4-stream-benchmark", ".mp4");
  }

  /** The chunks of one decode, paced, before each timed finish. */
  @Setup(Level.Invocation)
  public void feed() throws InterruptedException {
    stream = new Mp4Stream();
    stream.accept(0, video.slice(0, 0, 1));
    for (int first = 1; first < FRAMES; first += 4) {
      Thread.sleep(paceMillis);
      stream.accept(first, video.slice(0, first, first + 4));
    }
  }

  @Benchmark
  public void finishAfterTheLastChunk() throws IOException {
    if (!stream.awaitFrames(FRAMES, Duration.ofSeconds(5))) {
      throw new IllegalStateException("the stream did not take every frame");
    }
    stream.finish(target, 16, null);
  }

  @TearDown
  public void tearDown() throws IOException {
    Files.deleteIfExists(target);
  }
}
