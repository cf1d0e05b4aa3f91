package dev.stepweave.bench.gpu;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * What switching experts costs on one GPU (issue #12, Wan2.2 A14B): two Wan 14B-configuration
 * transformers with random weights, each in its own component pool as {@code WanModel} loads them,
 * both resident; the 480p×81 denoise forward (latent {@code [1, 16, 21, 60, 104]}, text 512)
 * replayed from each expert's CUDA graph as the denoise loop runs it. The switch cost is the median
 * forward of the second expert right after the first's, less its median right after its own; and,
 * for a device too small to hold both, what sleeping and waking one expert's pool costs. CUDA-event
 * medians. Usage: {@code ExpertSwitchBench [14b|1.3b]}.
 */
public final class ExpertSwitchBench {
  private static final int ITERATIONS = 3;

  private ExpertSwitchBench() {}

  public static void main(String[] args) {
    String size = args.length > 0 ? args[0] : "14b";
    CudaBackend gpu = Bench.openBf16OrExit();
    WanTransformer high =
        gpu.loadingComponent("bench/transformer", () -> Bench.randomDit(gpu, size));
    WanTransformer low =
        gpu.loadingComponent("bench/transformer_2", () -> Bench.randomDit(gpu, size));
    long[] mem = gpu.context().memoryInfo();
    System.out.printf(
        "ROW both %s experts resident: device memory in use | %.1f GB of %.1f GB%n",
        size, (mem[1] - mem[0]) / 1e9, mem[1] / 1e9);
    List<Tensor> inputs =
        List.of(
            gpu.upload(RandomWeights.uniform(1, 1f, 1, 16, 21, 60, 104), DType.F32),
            gpu.upload(Tensor.full(900f, 1), DType.F32),
            gpu.upload(RandomWeights.uniform(2, 1f, 1, 512, 4096), DType.F32));
    Runnable first = replay(gpu, "transformer", high, inputs);
    Runnable second = replay(gpu, "transformer_2", low, inputs);
    first.run(); // records each expert's graph once, as the first request's steps do
    second.run();
    gpu.synchronize();
    float[] steady = new float[ITERATIONS];
    float[] switched = new float[ITERATIONS];
    for (int i = 0; i < ITERATIONS; i++) {
      gpu.context().time(first);
      switched[i] = gpu.context().time(second); // right after the other expert
      steady[i] = gpu.context().time(second); // right after itself
    }
    float steadyMs = median(steady);
    float switchedMs = median(switched);
    System.out.printf(
        "ROW %s forward 480p×81, second expert after itself | %.1f ms%n", size, steadyMs);
    System.out.printf(
        "ROW %s forward 480p×81, second expert right after the first | %.1f ms (switch cost %.1f"
            + " ms)%n",
        size, switchedMs, switchedMs - steadyMs);
    long t0 = System.nanoTime();
    gpu.sleepComponent("bench/transformer_2");
    gpu.synchronize();
    double sleepMs = (System.nanoTime() - t0) / 1e6;
    t0 = System.nanoTime();
    gpu.wakeComponent("bench/transformer_2");
    gpu.synchronize();
    double wakeMs = (System.nanoTime() - t0) / 1e6;
    float afterWake = gpu.context().time(second);
    System.out.printf(
        "ROW sleep / wake one %s expert (device too small for both) | %.0f ms / %.0f ms; first"
            + " forward after the wake %.1f ms%n",
        size, sleepMs, wakeMs, afterWake);
    System.exit(0);
  }

  private static Runnable replay(
      CudaBackend gpu, String expert, WanTransformer dit, List<Tensor> inputs) {
    Function<List<Tensor>, Tensor> body =
        in -> dit.forward(in.get(0), in.get(1), in.get(2), TapSink.NONE);
    GraphKey key =
        GraphKey.of("bench", expert, "denoise", "DIFFUSION_STEP", "bf16", "single", inputs);
    return () -> gpu.replayable(key, inputs, body);
  }

  private static float median(float[] ms) {
    float[] sorted = ms.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }
}
