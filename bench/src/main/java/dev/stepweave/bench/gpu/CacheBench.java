package dev.stepweave.bench.gpu;

import dev.stepweave.core.extend.ActivePlugin;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Plugin;
import dev.stepweave.core.extend.PluginState;
import dev.stepweave.core.loop.WorkCall;
import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.models.wan.cache.BlockCacheRow;
import dev.stepweave.models.wan.cache.DenoiseHooks;
import dev.stepweave.models.wan.cache.WanCaches;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The caches of docs/caching.md on the GPU: the Wan2.1-1.3B DiT (random BF16 weights) denoising a
 * 480×832 latent with classifier-free guidance (one batch-2 forward per step, guidance 5) and a
 * shifted flow-matching Euler schedule (shift 3), uncached and with each cache setting. The caches
 * run through the same code as the CPU engine's: {@link DenoiseHooks} assembled from the plugins'
 * validated parameters, {@link DenoiseHooks#blocks} (the residual cache) as the forward's block
 * hooks, {@link DenoiseHooks#reusedStep} / {@link DenoiseHooks#computedStep} for the step cache,
 * each request's {@link PluginState} written on a copy and committed after the step.
 *
 * <p>{@code java … dev.stepweave.cuda.CacheBench [frames=17] [steps=20]}: frames 17 → latent
 * [1,16,5,60,104]; 81 → [1,16,21,60,104] (then only a few settings, to stay within minutes). Step
 * time is the wall time of the whole denoise (synchronised at its end) over the steps; the error is
 * the relative L2 distance of the final latents from the uncached run's.
 */
public final class CacheBench {
  private static final float GUIDANCE = 5f;
  private static final double SHIFT = 3;

  /** One cache setting: a label and the request's plugin parameters (empty: uncached). */
  private record Setting(String label, Map<String, Map<String, String>> plugins) {}

  private record Outcome(Tensor latents, double msPerStep, String skipped, String reused) {}

  private final CudaBackend gpu;
  private final WanTransformer dit;
  private final Extensions deployed =
      WanCaches.enable(Extensions.builder(), List.copyOf(WanCaches.ALL.keySet()), Map.of()).build();

  private CacheBench(CudaBackend gpu) {
    this.gpu = gpu;
    WanTransformerConfig cfg = Bench.config("1.3b");
    long t0 = System.nanoTime();
    this.dit =
        WanTransformer.load(
            cfg,
            new Weights(
                new RandomWeights(WanDitShapes.of(cfg), DType.BF16, 0.02f), gpu, DType.BF16));
    gpu.synchronize();
    System.out.printf("  loaded 1.3b in %.1f s%n", (System.nanoTime() - t0) / 1e9);
  }

  public static void main(String[] args) {
    int frames = args.length > 0 ? Integer.parseInt(args[0]) : 17;
    int steps = args.length > 1 ? Integer.parseInt(args[1]) : 20;
    CacheBench bench = new CacheBench(Bench.openBf16OrExit());
    System.out.println("== " + bench.gpu.name() + ", " + frames + " frames, " + steps + " steps");
    List<Setting> settings = new ArrayList<>();
    settings.add(new Setting("uncached", Map.of()));
    settings.add(dbcache(8, "0.1"));
    settings.add(dbcache(8, "0.3"));
    settings.add(fbcache("0.1", "0"));
    settings.add(fbcache("0.3", "0"));
    if (frames <= 17) {
      settings.add(dbcache(8, "0.6"));
      settings.add(fbcache("0.6", "0"));
      settings.add(fbcache("0.3", "2"));
      settings.add(stepcache("0.1"));
      settings.add(stepcache("0.3"));
    }
    bench.run(settings, frames, steps);
    System.exit(0);
  }

  private static Setting dbcache(int fn, String threshold) {
    return new Setting(
        "DBCache F" + fn + "B0 t=" + threshold,
        Map.of("dbcache", Map.of("fn", Integer.toString(fn), "bn", "0", "threshold", threshold)));
  }

  private static Setting fbcache(String threshold, String taylorOrder) {
    return new Setting(
        "FBCache (F1B0) t="
            + threshold
            + (taylorOrder.equals("0") ? "" : ", TaylorSeer " + taylorOrder),
        Map.of("fbcache", Map.of("threshold", threshold, "taylorseer_order", taylorOrder)));
  }

  private static Setting stepcache(String threshold) {
    return new Setting(
        "stepcache t=" + threshold, Map.of("stepcache", Map.of("threshold", threshold)));
  }

  private void run(List<Setting> settings, int frames, int steps) {
    int latentFrames = (frames - 1) / 4 + 1;
    Tensor noise = RandomWeights.uniform(1, 1f, 1, 16, latentFrames, 60, 104);
    Tensor context = gpu.upload(RandomWeights.uniform(2, 1f, 2, 512, 4096), DType.F32);
    // Warm-up: kernels compiled and the allocator's blocks sized before anything is timed.
    Tensor pair = gpu.upload(noise, DType.F32);
    dit.forward(
        gpu.concat(List.of(pair, pair), 0),
        gpu.upload(Tensor.full(999f, 2), DType.F32),
        context,
        TapSink.NONE);
    gpu.synchronize();

    Map<Setting, Outcome> outcomes = new LinkedHashMap<>();
    for (Setting s : settings) {
      Outcome o = denoise(s, noise, context, steps);
      System.out.printf(
          "ROW %s | %s | %s | %.1f ms/step%n", s.label(), o.skipped(), o.reused(), o.msPerStep());
      outcomes.put(s, o);
    }
    Outcome base = outcomes.get(settings.getFirst());
    System.out.println();
    System.out.println(
        "| setting | blocks skipped | steps reused | ms/step | speed-up | latent rel. L2 error |");
    System.out.println("|---|---|---|---|---|---|");
    outcomes.forEach(
        (s, o) ->
            System.out.printf(
                "| %s | %s | %s | %.1f | %.2f× | %.3g |%n",
                s.label(),
                o.skipped(),
                o.reused(),
                o.msPerStep(),
                base.msPerStep() / o.msPerStep(),
                relativeL2(gpu.download(o.latents()), gpu.download(base.latents()))));
  }

  /** One request's whole denoise with {@code setting}'s caches, timed. */
  private Outcome denoise(Setting setting, Tensor noise, Tensor context, int steps) {
    List<ActivePlugin> active = new ArrayList<>();
    setting
        .plugins()
        .forEach(
            (id, raw) -> {
              Plugin p = deployed.plugins().get(id);
              active.add(new ActivePlugin(p, deployed.schema(id).validate(id, raw)));
            });
    DenoiseHooks hooks = DenoiseHooks.assemble(active, Extensions.NONE);
    PluginState state = new PluginState();
    Tensor latents = gpu.upload(noise, DType.F32);
    gpu.synchronize();
    long t0 = System.nanoTime();
    for (int i = 0; i < steps; i++) {
      float sigma = sigma(i, steps);
      float next = sigma(i + 1, steps);
      Tensor guided;
      Optional<WorkCall> reused = hooks.reusedStep(gpu, state, latents, i);
      if (reused.isPresent()) {
        var result = reused.get().run();
        guided = result.output();
        state = result.update(PluginState.class);
      } else {
        PluginState work = state.copy();
        List<BlockCacheRow> rows = hooks.rows(work, List.of("cond", "uncond"), i);
        BlockHooks blocks = DenoiseHooks.blocks(rows, gpu);
        Tensor v = forward(gpu.concat(List.of(latents, latents), 0), sigma, context, blocks, work);
        Tensor cond = v.slice(0, 0, 1);
        Tensor uncond = v.slice(0, 1, 2);
        guided = gpu.add(uncond, gpu.affine(gpu.sub(cond, uncond), GUIDANCE, 0f));
        hooks.computedStep(gpu, work, latents, guided, i);
        state = work;
      }
      latents = gpu.add(latents, gpu.affine(guided, next - sigma, 0f));
      state = hooks.afterStep(gpu, state, latents, i + 1);
    }
    gpu.synchronize();
    double ms = (System.nanoTime() - t0) / 1e6 / steps;
    Map<String, Long> report = state.report();
    return new Outcome(latents, ms, skipped(report), reused(report, steps));
  }

  /**
   * One batch-2 forward. Uncached, the forward releases its own activations; with a block cache its
   * blocks release theirs, and a scope around the call releases the rest but the output and every
   * tensor of the request's plugin state (the residuals the cache stored).
   */
  private Tensor forward(
      Tensor pair, float sigma, Tensor context, BlockHooks blocks, PluginState work) {
    Tensor t = gpu.upload(Tensor.full(sigma * 1000f, 2), DType.F32);
    if (blocks == BlockHooks.NONE) {
      return dit.forward(pair, t, context, TapSink.NONE, blocks);
    }
    try (MemoryScope scope = gpu.openScope()) {
      Tensor v = dit.forward(pair, t, context, TapSink.NONE, blocks);
      List<Tensor> keep = new ArrayList<>(work.tensors(x -> x).values());
      keep.add(v);
      scope.releaseExcept(keep.toArray(Tensor[]::new));
      return v;
    }
  }

  /** Flow-matching sigma of step {@code i}: linear in [1, 0], shifted as Wan's schedulers do. */
  private static float sigma(int i, int steps) {
    double s = 1 - (double) i / steps;
    return (float) (SHIFT * s / (1 + (SHIFT - 1) * s));
  }

  private static String skipped(Map<String, Long> report) {
    for (String id : List.of("dbcache", "fbcache")) {
      Long skipped = report.get(id + ".skipped_blocks");
      Long blocks = report.get(id + ".blocks");
      if (blocks != null) {
        long s = skipped == null ? 0 : skipped;
        return String.format("%d/%d (%.0f%%)", s, blocks, 100.0 * s / blocks);
      }
    }
    return "—";
  }

  private static String reused(Map<String, Long> report, int steps) {
    Long cached = report.get("stepcache.cached_steps");
    return cached == null ? "—" : cached + "/" + steps;
  }

  /** ‖actual − expected‖₂ / ‖expected‖₂ of two host tensors, as the parity reports measure it. */
  private static double relativeL2(Tensor actual, Tensor expected) {
    return Comparison.of("latents", actual, expected, new Tolerance.RelativeL2(1))
        .relativeL2Error();
  }
}
