package dev.stepweave.bench.gpu;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * Eager against CUDA-graph-replayed Wan2.1-1.3B DiT forwards (random BF16 weights, BF16 backend) at
 * the image shapes where launch overhead shows: 256×256 (latent {@code [B, 16, 1, 32, 32]}) and
 * 480×832 ({@code [B, 16, 1, 60, 104]}), text 512, batch 1 and 8. Timings are CUDA-event medians
 * after a warm-up. The recorded body is the forward as the denoise loop records it (it releases its
 * activations block by block into the graph's pool); the pool's size and the recording time are
 * reported. {@code GraphBench quick} runs the 256×256 batch-1 row only.
 */
public final class GraphBench {
  private static final int ITERATIONS = 20;

  private record Row(String what, float eager, float graph, String cost, String reference) {}

  private final CudaBackend gpu;
  private final WanTransformer dit;
  private final List<Row> rows = new ArrayList<>();

  private GraphBench(CudaBackend gpu, WanTransformer dit) {
    this.gpu = gpu;
    this.dit = dit;
  }

  public static void main(String[] args) {
    CudaBackend gpu = Bench.openBf16OrExit();
    System.out.println("== " + gpu.name());
    GraphBench bench = new GraphBench(gpu, Bench.randomDit(gpu, "1.3b"));
    if (args.length > 0 && args[0].equals("video")) {
      // The guided 480p×81 step: replay against eager, as the denoise loop's first calls compare.
      bench.video();
      System.out.println("graph comparisons:\n" + gpu.graphComparisons().indent(2));
      System.exit(0);
    }
    bench.shape("256×256, batch 1", 1, 32, 32, "38.6 ms");
    if (args.length == 0 || !args[0].equals("quick")) {
      bench.shape("256×256, batch 8", 8, 32, 32, "36.1 ms");
      bench.shape("480×832, batch 1", 1, 60, 104, "36.4 ms");
      bench.shape("480×832, batch 8", 8, 60, 104, "111.3 ms");
    }
    System.out.println();
    System.out.println(
        "| 1.3B DiT forward | eager | graph replay | graph pool, recording |"
            + " reference eager (PyTorch, H200) |");
    System.out.println("|---|---|---|---|---|");
    for (Row r : bench.rows) {
      System.out.printf(
          "| %s | %.1f ms | %.1f ms | %s | %s |%n",
          r.what(), r.eager(), r.graph(), r.cost(), r.reference());
    }
    System.out.println("graph cache: " + gpu.graphStats());
    System.exit(0);
  }

  private void shape(String what, int b, int h, int w, String reference) {
    List<Tensor> inputs =
        List.of(
            gpu.upload(RandomWeights.uniform(1, 1f, b, 16, 1, h, w), DType.F32),
            gpu.upload(Tensor.full(500f, b), DType.F32),
            gpu.upload(RandomWeights.uniform(2, 1f, b, 512, 4096), DType.F32));
    Function<List<Tensor>, Tensor> body =
        in -> dit.forward(in.get(0), in.get(1), in.get(2), TapSink.NONE);
    gpu.synchronize();
    float eager = median(what + " eager", () -> body.apply(inputs));
    GraphKey key =
        GraphKey.of("bench", "transformer", "denoise", "DIFFUSION_STEP", "bf16", "single", inputs);
    long poolBefore = gpu.graphStats().poolBytes();
    long t0 = System.nanoTime();
    gpu.replayable(key, inputs, body); // runs eagerly, then records
    gpu.synchronize();
    double recordMs = (System.nanoTime() - t0) / 1e6;
    long pool = gpu.graphStats().poolBytes() - poolBefore;
    float graph = median(what + " graph", () -> gpu.replayable(key, inputs, body));
    float[] eagerOut = gpu.download(body.apply(inputs)).toFloatArray();
    float[] graphOut = gpu.download(gpu.replayable(key, inputs, body)).toFloatArray();
    System.out.println("  replay bit-identical to eager: " + Arrays.equals(eagerOut, graphOut));
    String cost = String.format("%.2f GB, %.0f ms", pool / 1e9, recordMs);
    System.out.printf(
        "ROW %s | eager %.1f ms | graph %.1f ms (%s) | %s%n", what, eager, graph, cost, reference);
    rows.add(new Row(what, eager, graph, cost, reference));
    gpu.clearGraphs();
  }

  /**
   * The 480p×81 guided step's forward ({@code [2, 16, 21, 60, 104]}) through {@code replayable} for
   * five calls: the warm-up and recording, the timed replay, the timed eager run that decides, and
   * two more by the decision; each call's CUDA-event time is printed.
   */
  private void video() {
    List<Tensor> inputs =
        List.of(
            gpu.upload(RandomWeights.uniform(1, 1f, 2, 16, 21, 60, 104), DType.F32),
            gpu.upload(Tensor.full(500f, 2), DType.F32),
            gpu.upload(RandomWeights.uniform(2, 1f, 2, 512, 4096), DType.F32));
    Function<List<Tensor>, Tensor> body =
        in -> dit.forward(in.get(0), in.get(1), in.get(2), TapSink.NONE);
    GraphKey key =
        GraphKey.of("bench", "transformer", "denoise", "DIFFUSION_STEP", "bf16", "single", inputs);
    gpu.synchronize();
    for (int call = 1; call <= 5; call++) {
      float ms = gpu.context().time(() -> gpu.replayable(key, inputs, body));
      System.out.printf("  480p×81 batch 2, call %d: %.1f ms (%s)%n", call, ms, gpu.graphStats());
    }
  }

  /** Median CUDA-event milliseconds of {@link #ITERATIONS} runs after one warm-up. */
  private float median(String what, Runnable work) {
    gpu.context().time(work);
    float[] ms = new float[ITERATIONS];
    for (int i = 0; i < ITERATIONS; i++) {
      ms[i] = gpu.context().time(work);
    }
    Arrays.sort(ms);
    System.out.printf(
        "  %s: min %.2f, median %.2f, max %.2f ms%n",
        what, ms[0], ms[ITERATIONS / 2], ms[ITERATIONS - 1]);
    return ms[ITERATIONS / 2];
  }
}
