package dev.stepweave.bench.gpu;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.models.wan.WanModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * RL rollout throughput through the engine (issue 17, item 8; design §10's claim that a GRPO/NFT
 * group is a better batching case than serving): K samples of one prompt at one size, submitted as
 * one group ({@code Engine.submitAll}: admitted together, every denoise step K wide, one text
 * encoding), against the same K samples one at a time. Whole rollouts — text encoding, the SDE
 * denoise with FINAL behaviour capture, the VAE decode — timed on the wall clock after the device
 * is done (each request's result is a host tensor), medians of {@code repeats} after a warm-up of
 * each.
 *
 * <p>Arguments: checkpoint directory, K, WxH, frames, steps, repeats.
 */
public final class RolloutBench {
  private RolloutBench() {}

  public static void main(String[] args) throws Exception {
    Path checkpoint = Path.of(args[0]);
    int k = args.length > 1 ? Integer.parseInt(args[1]) : 8;
    String[] size = (args.length > 2 ? args[2] : "256x256").split("x");
    int frames = args.length > 3 ? Integer.parseInt(args[3]) : 33;
    int steps = args.length > 4 ? Integer.parseInt(args[4]) : 20;
    int repeats = args.length > 5 ? Integer.parseInt(args[5]) : 3;
    int width = Integer.parseInt(size[0]);
    int height = Integer.parseInt(size[1]);
    CudaBackend gpu = Bench.openBf16OrExit();
    EngineConfig config = EngineConfig.builder().maxRunning(k).maxBatchSize(k).build();
    try (WanModel model = WanModel.load(checkpoint, gpu);
        Engine engine = new Engine(model, config)) {
      long[] seed = {0};
      java.util.function.IntFunction<List<Request>> group =
          n -> {
            List<Request> g = new ArrayList<>();
            for (int i = 0; i < n; i++) {
              long s = seed[0]++;
              g.add(
                  Request.builder(
                          TaskType.T2V,
                          new DiffusionParams(
                              steps,
                              1.0,
                              s,
                              width,
                              height,
                              frames,
                              16,
                              "",
                              Optional.of("sde"),
                              Optional.empty()))
                      .id("rollout-" + s)
                      .prompt("a red ball moving left on a black background")
                      .output(OutputSpec.DEFAULT.capturing(BehaviorCapture.FINAL))
                      .build());
            }
            return g;
          };
      double[] grouped = new double[repeats];
      double[] single = new double[repeats];
      for (int r = -1; r < repeats; r++) { // r = -1: warm-up (kernels, plans, graphs)
        long t0 = System.nanoTime();
        for (RequestHandle h : engine.submitAll(group.apply(k))) {
          h.result().get(600, TimeUnit.SECONDS);
        }
        long t1 = System.nanoTime();
        for (Request one : group.apply(k)) {
          engine.submit(one).result().get(600, TimeUnit.SECONDS);
        }
        long t2 = System.nanoTime();
        if (r >= 0) {
          grouped[r] = (t1 - t0) / 1e9;
          single[r] = (t2 - t1) / 1e9;
        }
        System.out.printf(
            Locale.ROOT,
            "%s: group of %d %.2f s, one at a time %.2f s%n",
            r < 0 ? "warm-up" : "run " + (r + 1),
            k,
            (t1 - t0) / 1e9,
            (t2 - t1) / 1e9);
      }
      double g = median(grouped);
      double s = median(single);
      System.out.printf(
          Locale.ROOT,
          "ROLLOUT K=%d %dx%dx%d %d steps (sde, CFG-free, FINAL capture): grouped %.2f s = %.3f"
              + " samples/s; one at a time %.2f s = %.3f samples/s; speed-up %.2fx (medians of %d)%n",
          k,
          width,
          height,
          frames,
          steps,
          g,
          k / g,
          s,
          k / s,
          s / g,
          repeats);
    }
  }

  private static double median(double[] v) {
    double[] c = v.clone();
    Arrays.sort(c);
    return c[c.length / 2];
  }
}
