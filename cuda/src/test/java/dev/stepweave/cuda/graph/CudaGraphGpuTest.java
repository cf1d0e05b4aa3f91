package dev.stepweave.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.Gpu;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * CUDA graphs through {@link CudaBackend#replayable}: the tiny golden DiT replayed is bit-identical
 * to its eager forward for new inputs of the recorded shape (F32 and BF16 modes); another shape
 * records another graph; eviction and clearing free the graphs' memory; a host operation inside the
 * recorded body fails with a clear exception and leaves the backend working.
 */
@Tag("gpu")
class CudaGraphGpuTest {
  private static final Path TINY =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"), "wan21-tiny");

  @AfterEach
  void restore() {
    for (CudaBackend gpu : List.of(Gpu.backend(), Gpu.bf16())) {
      gpu.clearGraphs();
      gpu.graphCapacity(CudaGraphs.DEFAULT_CAPACITY);
    }
  }

  private static WanTransformer tiny(CudaBackend gpu) {
    DiffusersDirectory.Component c = DiffusersDirectory.open(TINY).component("transformer");
    return WanTransformer.load(
        WanTransformerConfig.read(c.configFile()), new Weights(c.openWeights(), gpu, DType.F32));
  }

  /** Latents {@code [B, 16, F, H, W]}, timesteps {@code [B]}, text {@code [B, 7, 24]}. */
  private static List<Tensor> inputs(CudaBackend gpu, long seed, int b, int f, int h, int w) {
    float[] t = new float[b];
    for (int i = 0; i < b; i++) {
      t[i] = 50f + 97f * seed + 13f * i;
    }
    return List.of(
        gpu.upload(RandomWeights.uniform(seed, 1f, b, 16, f, h, w), DType.F32),
        gpu.upload(Tensor.of(t, b), DType.F32),
        gpu.upload(RandomWeights.uniform(seed + 1000, 1f, b, 7, 24), DType.F32));
  }

  private static Function<List<Tensor>, Tensor> forward(WanTransformer dit) {
    return in -> dit.forward(in.get(0), in.get(1), in.get(2), TapSink.NONE);
  }

  private static GraphKey key(String model, List<Tensor> inputs) {
    return GraphKey.of(model, "transformer", "denoise", "DIFFUSION_STEP", "f32", "single", inputs);
  }

  private static float[] host(CudaBackend gpu, Tensor t) {
    return gpu.download(t).toFloatArray();
  }

  @Test
  void replaysAreBitIdenticalToEagerRunsOnNewInputs() {
    for (CudaBackend gpu : List.of(Gpu.backend(), Gpu.bf16())) {
      WanTransformer dit = tiny(gpu);
      GraphStats before = gpu.graphStats();
      float[] previous = null;
      Tensor kept = null;
      float[] keptValues = null;
      for (long seed = 1; seed <= 4; seed++) {
        List<Tensor> in = inputs(gpu, seed, 1, 2, 8, 12);
        float[] eager = host(gpu, forward(dit).apply(in));
        Tensor out = gpu.replayable(key("tiny", in), in, forward(dit));
        float[] graphed = host(gpu, out);
        assertArrayEquals(eager, graphed, gpu.precision() + " seed " + seed);
        if (previous != null) {
          assertFalse(Arrays.equals(previous, graphed), "new inputs, new output");
        }
        previous = graphed;
        if (seed == 2) {
          kept = out;
          keptValues = graphed;
        }
      }
      assertArrayEquals(keptValues, host(gpu, kept), "a replay's result is the caller's own");
      GraphStats after = gpu.graphStats();
      assertEquals(before.recordings() + 1, after.recordings(), "one recording for the key");
      assertEquals(before.replays() + 3, after.replays(), "then replays");
      assertTrue(after.poolBytes() > 0);
    }
  }

  @Test
  void anotherShapeRecordsAnotherGraph() {
    CudaBackend gpu = Gpu.backend();
    WanTransformer dit = tiny(gpu);
    GraphStats before = gpu.graphStats();
    List<Tensor> small = inputs(gpu, 1, 1, 1, 8, 8);
    List<Tensor> large = inputs(gpu, 2, 2, 2, 8, 12);
    gpu.replayable(key("tiny", small), small, forward(dit));
    gpu.replayable(key("tiny", large), large, forward(dit));
    GraphStats two = gpu.graphStats();
    assertEquals(before.graphs() + 2, two.graphs());
    assertEquals(before.recordings() + 2, two.recordings());

    List<Tensor> small2 = inputs(gpu, 3, 1, 1, 8, 8);
    List<Tensor> large2 = inputs(gpu, 4, 2, 2, 8, 12);
    assertArrayEquals(
        host(gpu, forward(dit).apply(small2)),
        host(gpu, gpu.replayable(key("tiny", small2), small2, forward(dit))));
    assertArrayEquals(
        host(gpu, forward(dit).apply(large2)),
        host(gpu, gpu.replayable(key("tiny", large2), large2, forward(dit))));
    GraphStats after = gpu.graphStats();
    assertEquals(two.recordings(), after.recordings(), "both shapes replayed");
    assertEquals(two.replays() + 2, after.replays());
  }

  @Test
  void evictionAndClearingFreeTheGraphsMemory() {
    CudaBackend gpu = Gpu.backend();
    gpu.graphCapacity(1);
    int n = 64 << 20; // 256 MiB of F32
    long bytes = 4L * n;
    Tensor big = gpu.affine(gpu.zeros(DType.F32, n), 0f, 1.5f);
    Function<List<Tensor>, Tensor> body = in -> gpu.affine(gpu.add(in.get(0), in.get(0)), 2f, 1f);
    GraphKey bigKey = key("synthetic", List.of(big));
    Tensor warm = gpu.replayable(bigKey, List.of(big), body);
    Tensor replayed = gpu.replayable(bigKey, List.of(big), body);
    GraphStats one = gpu.graphStats();
    assertTrue(one.poolBytes() >= 3 * bytes, "static input, intermediate and output: " + one);

    gpu.synchronize();
    long freeBefore = gpu.context().memoryInfo()[0];
    long reservedBefore = gpu.reservedBytes();
    Tensor small = gpu.affine(gpu.zeros(DType.F32, 1024), 0f, 0.5f);
    gpu.replayable(key("synthetic", List.of(small)), List.of(small), body);
    gpu.synchronize();
    GraphStats evicted = gpu.graphStats();
    assertEquals(1, evicted.graphs());
    assertEquals(one.evictions() + 1, evicted.evictions());
    assertTrue(evicted.poolBytes() < bytes, evicted.toString());
    assertTrue(
        gpu.reservedBytes() <= reservedBefore - one.poolBytes() + evicted.poolBytes() + (16L << 20),
        "the evicted graph's pool went back to the driver");
    assertTrue(
        gpu.context().memoryInfo()[0] - freeBefore >= 2 * bytes,
        "the driver has the evicted graph's memory again");
    float[] expected = new float[] {7f, 7f, 7f};
    for (Tensor t : List.of(warm, replayed)) {
      assertArrayEquals(
          expected, Arrays.copyOf(host(gpu, t), 3), "results outlive the evicted graph");
    }

    long reservedHeld = gpu.reservedBytes();
    long pool = gpu.graphStats().poolBytes();
    gpu.clearGraphs();
    assertEquals(0, gpu.graphStats().graphs());
    assertEquals(0, gpu.graphStats().poolBytes());
    assertEquals(reservedHeld - pool, gpu.reservedBytes(), "clearing frees exactly the pools");
    gpu.replayable(bigKey, List.of(big), body);
    assertEquals(evicted.recordings() + 1, gpu.graphStats().recordings(), "recorded again");
  }

  @Test
  void aLongReplayIsComparedOnceWithAnEagerRunAndTheFasterStays() {
    CudaBackend gpu = Gpu.backend();
    int n = 64 << 20; // 256 MiB of F32: each pass moves half a gigabyte
    Tensor x = gpu.affine(gpu.zeros(DType.F32, n), 0f, 0.25f);
    Function<List<Tensor>, Tensor> body =
        in -> {
          Tensor y = in.get(0);
          for (int i = 0; i < 400; i++) { // ≈ 70 ms on an H200, over the comparison's bar
            y = gpu.affine(y, 1f, 0.5f);
          }
          return y;
        };
    GraphKey k = key("long", List.of(x));
    float expected = 0.25f + 400 * 0.5f;
    GraphStats before = gpu.graphStats();
    for (int call = 1; call <= 5; call++) {
      Tensor out = gpu.replayable(k, List.of(x), body);
      assertEquals(expected, host(gpu, out.slice(0, 0, 4))[3], "call " + call);
    }
    String compared = gpu.graphComparisons();
    System.out.println("  " + compared);
    assertTrue(compared.contains("replay ") && compared.contains(" ms, eager "), compared);
    GraphStats after = gpu.graphStats();
    assertEquals(before.recordings() + 1, after.recordings(), "recorded once");
    if (compared.contains("runs eagerly")) {
      // Calls 1 (warm-up, recording), 2 (timed replay), 3 (timed eager run), then eager: 1 replay.
      assertEquals(before.replays() + 1, after.replays());
      assertEquals(before.graphs(), after.graphs(), "the slower graph was freed");
    } else {
      assertTrue(compared.contains("keeps its graph"), compared);
      assertEquals(before.replays() + 3, after.replays(), "replays after the eager trial");
      assertEquals(before.graphs() + 1, after.graphs());
    }
  }

  @Test
  void aHostOperationInsideTheRecordingFailsClearly() {
    CudaBackend gpu = Gpu.backend();
    Tensor x = gpu.upload(Tensor.of(new float[] {1, 2, 3, 4}, 4), DType.F32);
    List<Tensor> in = List.of(x);
    record Case(String name, String expected, Function<List<Tensor>, Tensor> body) {}
    List<Case> cases =
        List.of(
            new Case(
                "download",
                "a download of",
                i -> gpu.affine(gpu.upload(gpu.download(i.get(0)), DType.F32), 2f, 0f)),
            new Case(
                "upload",
                "an upload of",
                i -> gpu.add(i.get(0), gpu.upload(Tensor.full(1f, 4), DType.F32))),
            new Case(
                "synchronize",
                "a wait for the stream",
                i -> {
                  Tensor y = gpu.affine(i.get(0), 3f, 0f);
                  gpu.synchronize();
                  return y;
                }));
    for (Case c : cases) {
      GraphStats before = gpu.graphStats();
      GraphKey k = key("host-" + c.name(), in);
      IllegalStateException e =
          assertThrows(IllegalStateException.class, () -> gpu.replayable(k, in, c.body()));
      assertTrue(e.getMessage().startsWith(c.expected()), e.getMessage());
      assertTrue(e.getMessage().contains("CUDA graph"), e.getMessage());
      assertEquals(before.graphs(), gpu.graphStats().graphs(), "nothing cached for " + c.name());
      assertEquals(
          Driver.CU_STREAM_CAPTURE_STATUS_NONE,
          CudaGraph.captureStatus(gpu.context().stream()),
          "the stream left capture mode");
      assertArrayEquals(
          new float[] {2, 4, 6, 8}, host(gpu, gpu.affine(x, 2f, 0f)), "the backend still works");
    }
  }
}
