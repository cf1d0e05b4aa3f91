package dev.stepweave.bench.gpu;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.models.wan.transformer.LayerAdapter;
import dev.stepweave.models.wan.transformer.LayerUpdate;
import dev.stepweave.models.wan.transformer.LinearShape;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * LoRA adapters on the Wan2.1-1.3B DiT forward at 480p×81 (latent {@code [B, 16, 21, 60, 104]}, 32
 * 760 tokens, text 512), BF16, random weights, CUDA-event medians after a warm-up (issue 13's
 * performance targets): (a) plain; (b) one rank-32 adapter on every attention and FFN linear of
 * every block (q, k, v, out of self- and cross-attention, {@code ffn.net.0.proj}, {@code
 * ffn.net.2}); both also as CUDA-graph replays, the denoise loop's path; (c) a batch of 4 rows with
 * 4 different such adapters against (d) 4 rows sharing one, and the plain batch of 4; (e) one
 * adapter's upload from host BF16 tensors (size, wall time); then each adapted layer shape alone at
 * 32 760 tokens, plain against the two ways {@code CudaBackend} applies updates (merged weights,
 * what {@code linearLowRank} chose here, and the unmerged low-rank GEMMs of {@code addLowRank}),
 * which shows what the choice is worth. {@code LoraBench profile} adds the op profile of (b).
 */
public final class LoraBench {
  private static final int RANK = 32;
  private static final Set<String> TARGETS =
      Set.of(
          "attn1.to_q",
          "attn1.to_k",
          "attn1.to_v",
          "attn1.to_out.0",
          "attn2.to_q",
          "attn2.to_k",
          "attn2.to_v",
          "attn2.to_out.0",
          "ffn.net.0.proj",
          "ffn.net.2");

  private record RandomAdapter(String identity, Map<String, LayerUpdate> layers)
      implements LayerAdapter {}

  private final CudaBackend gpu;
  private final List<String> rows = new ArrayList<>();

  private LoraBench(CudaBackend gpu) {
    this.gpu = gpu;
  }

  public static void main(String[] args) {
    CudaBackend gpu = Bench.openBf16OrExit();
    System.out.println("== " + gpu.name());
    LoraBench bench = new LoraBench(gpu);
    WanTransformer dit = Bench.randomDit(gpu, "1.3b");
    Map<String, LinearShape> targets = targets(dit);
    List<LayerAdapter> adapters = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      adapters.add(bench.upload("lora" + i, hostFactors(targets, 10_000L * (i + 1)), i == 0));
    }
    AdapterRows one = rows(List.of(adapters.getFirst()));
    List<Tensor> b1 = inputs(gpu, 1);
    float plain = bench.time("(a) plain, batch 1", dit, b1, AdapterRows.NONE, 5);
    float adapted = bench.time("(b) rank-32 adapter, batch 1", dit, b1, one, 5);
    bench.row(
        String.format(
            "(b)/(a) = %.3f (+%.1f %%; target ≤ +5 %%)",
            adapted / plain, 100 * (adapted / plain - 1)));
    float plainGraph =
        bench.replayed("(a) plain, batch 1, graph replay", dit, b1, AdapterRows.NONE);
    float adaptedGraph = bench.replayed("(b) rank-32 adapter, batch 1, graph replay", dit, b1, one);
    bench.row(
        String.format(
            "graph replays: (b)/(a) = %.3f (+%.1f %%)",
            adaptedGraph / plainGraph, 100 * (adaptedGraph / plainGraph - 1)));
    List<Tensor> b4 = inputs(gpu, 4);
    float plain4 = bench.time("plain, batch 4", dit, b4, AdapterRows.NONE, 3);
    float mixed = bench.time("(c) batch 4, 4 different adapters", dit, b4, rows(adapters), 3);
    float shared =
        bench.time(
            "(d) batch 4 sharing one adapter",
            dit,
            b4,
            rows(List.of(adapters.get(0), adapters.get(0), adapters.get(0), adapters.get(0))),
            3);
    bench.row(
        String.format(
            "(c)/(d) = %.3f (target ≤ 1.1); (d)/plain batch 4 = %.3f",
            mixed / shared, shared / plain4));
    bench.layers(adapters);
    if (args.length > 0 && args[0].equals("profile")) {
      bench.profile(adapters.getFirst());
    }
    System.out.println();
    bench.rows.forEach(r -> System.out.println("| " + r + " |"));
    System.exit(0);
  }

  /** Every targeted linear of every block, with its widths. */
  private static Map<String, LinearShape> targets(WanTransformer dit) {
    Map<String, LinearShape> out = new LinkedHashMap<>();
    dit.adaptableLayers()
        .forEach(
            (name, shape) -> {
              int dot = name.indexOf('.', "blocks.".length());
              if (name.startsWith("blocks.") && TARGETS.contains(name.substring(dot + 1))) {
                out.put(name, shape);
              }
            });
    return out;
  }

  /**
   * Host BF16 factors {@code down [32, in]}, {@code up [out, 32]} per layer, as a file holds them.
   */
  private static Map<String, Tensor[]> hostFactors(Map<String, LinearShape> targets, long seed) {
    Map<String, Tensor[]> out = new LinkedHashMap<>();
    long s = seed;
    for (Map.Entry<String, LinearShape> e : targets.entrySet()) {
      LinearShape l = e.getValue();
      out.put(
          e.getKey(),
          new Tensor[] {
            RandomWeights.uniform(s++, 0.02f, RANK, l.in()).toHost(DType.BF16),
            RandomWeights.uniform(s++, 0.02f, l.out(), RANK).toHost(DType.BF16)
          });
    }
    return out;
  }

  /** (e): uploads one adapter's factors, timed (wall clock, the copies are synchronous). */
  private LayerAdapter upload(String name, Map<String, Tensor[]> factors, boolean report) {
    gpu.synchronize();
    long t0 = System.nanoTime();
    long bytes = 0;
    Map<String, LayerUpdate> layers = new LinkedHashMap<>();
    for (Map.Entry<String, Tensor[]> e : factors.entrySet()) {
      Tensor down = gpu.upload(e.getValue()[0], DType.BF16);
      Tensor up = gpu.upload(e.getValue()[1], DType.BF16);
      bytes += down.byteSize() + up.byteSize();
      layers.put(e.getKey(), new LayerUpdate(down, up, 1f, null));
    }
    gpu.synchronize();
    double ms = (System.nanoTime() - t0) / 1e6;
    if (report) {
      row(
          String.format(
              "(e) adapter upload host→device: %d layers, %.1f MB BF16, %.1f ms (%.1f GB/s)",
              layers.size(), bytes / 1e6, ms, bytes / ms / 1e6));
    }
    return new RandomAdapter(name, layers);
  }

  /** One row per adapter, each at strength 1. */
  private static AdapterRows rows(List<LayerAdapter> perRow) {
    return AdapterRows.of(
        perRow.stream().map(a -> List.of(new AdapterRows.Applied(a, 1f))).toList());
  }

  private static List<Tensor> inputs(CudaBackend gpu, int b) {
    return List.of(
        gpu.upload(RandomWeights.uniform(1, 1f, b, 16, 21, 60, 104), DType.F32),
        gpu.upload(Tensor.full(500f, b), DType.F32),
        gpu.upload(RandomWeights.uniform(2, 1f, b, 512, 4096), DType.F32));
  }

  private static Function<List<Tensor>, Tensor> body(WanTransformer dit, AdapterRows adapters) {
    return in ->
        dit.forward(in.get(0), in.get(1), in.get(2), TapSink.NONE, BlockHooks.NONE, adapters);
  }

  private float time(
      String what, WanTransformer dit, List<Tensor> in, AdapterRows adapters, int iterations) {
    Function<List<Tensor>, Tensor> body = body(dit, adapters);
    gpu.synchronize();
    gpu.resetPeaks();
    float ms = median(what, iterations, () -> body.apply(in));
    row(String.format("%s | %.1f ms | peak live %.1f GB", what, ms, gpu.peakLiveBytes() / 1e9));
    return ms;
  }

  /** Recorded once (after its eager warm-up), then replayed: the denoise loop's path. */
  private float replayed(String what, WanTransformer dit, List<Tensor> in, AdapterRows adapters) {
    GraphKey key =
        GraphKey.of("bench", "transformer", "denoise", "DIFFUSION_STEP", "bf16", "single", in)
            .withAdapters(adapters.composition());
    Function<List<Tensor>, Tensor> body = body(dit, adapters);
    gpu.replayable(key, in, body);
    float ms = median(what, 5, () -> gpu.replayable(key, in, body));
    row(
        String.format(
            "%s | %.1f ms | graph pool %.1f GB", what, ms, gpu.graphStats().poolBytes() / 1e9));
    gpu.clearGraphs();
    return ms;
  }

  /**
   * The three adapted layer shapes of a block alone at 480p×81 (x {@code [B, 32760, in]}): plain
   * (GELU fused where the FFN has it), merged ({@code linearLowRank}) and unmerged ({@code
   * addLowRank} after the plain linear, then GELU), batch 1 with adapter 0 and batch 4 with four;
   * and what each way adds to a whole forward (180 square, 30 up and 30 down projections; the
   * cross-attention's k and v on 512 text tokens are left out).
   */
  private void layers(List<LayerAdapter> adapters) {
    String[] names = {"blocks.0.attn1.to_q", "blocks.0.ffn.net.0.proj", "blocks.0.ffn.net.2"};
    int[] perForward = {180, 30, 30};
    for (int batch : new int[] {1, 4}) {
      double mergedTotal = 0, unmergedTotal = 0;
      for (int i = 0; i < names.length; i++) {
        String name = names[i];
        List<List<LowRank>> rows = new ArrayList<>();
        for (int b = 0; b < batch; b++) {
          LayerUpdate u = adapters.get(b).layers().get(name);
          rows.add(List.of(new LowRank(u.down(), u.up(), 1f)));
        }
        int in = rows.getFirst().getFirst().in(), out = rows.getFirst().getFirst().out();
        boolean gelu = name.endsWith("net.0.proj");
        Tensor x = gpu.upload(RandomWeights.uniform(3, 1f, batch, 32760, in), DType.BF16);
        Tensor w = gpu.upload(RandomWeights.uniform(4, 0.02f, out, in), DType.BF16);
        Tensor bias = gpu.upload(RandomWeights.uniform(5, 0.02f, out), DType.BF16);
        String what =
            String.format("%s %d→%d%s, batch %d", name, in, out, gelu ? "+GELU" : "", batch);
        float plain, merged, unmerged;
        try (MemoryScope scope = gpu.openScope()) {
          plain =
              median(
                  what + " plain",
                  10,
                  () ->
                      scope.releaseExcept(
                          gelu ? gpu.linearGeluTanh(x, w, bias) : gpu.linear(x, w, bias)));
          merged =
              median(
                  what + " merged",
                  10,
                  () -> scope.releaseExcept(gpu.linearLowRank(x, w, bias, gelu, rows)));
          unmerged =
              median(
                  what + " unmerged",
                  10,
                  () -> {
                    Tensor y = gpu.addLowRank(gpu.linear(x, w, bias), x, rows);
                    scope.releaseExcept(gelu ? gpu.gelu(y, true) : y);
                  });
          scope.releaseExcept();
        }
        mergedTotal += perForward[i] * (merged - plain);
        unmergedTotal += perForward[i] * (unmerged - plain);
        row(
            String.format(
                "layer %s | plain %.3f ms | merged %.3f ms (+%.3f) | unmerged %.3f ms (+%.3f) | ran: %s",
                what,
                plain,
                merged,
                merged - plain,
                unmerged,
                unmerged - plain,
                gpu.lowRankPath(x, w, gelu, rows)));
      }
      row(
          String.format(
              "batch %d, per forward (180 + 30 + 30 such layers): merged adds %.1f ms, unmerged would"
                  + " add %.1f ms",
              batch, mergedTotal, unmergedTotal));
    }
  }

  /** (b) op by op ({@link OpProfile}) on a second DiT that computes through the profile. */
  private void profile(LayerAdapter adapter) {
    OpProfile profile = OpProfile.over(gpu);
    WanTransformer dit = Bench.randomDit(profile.backend(), gpu, "1.3b");
    List<Tensor> in = inputs(gpu, 1);
    Function<List<Tensor>, Tensor> body = body(dit, rows(List.of(adapter)));
    body.apply(in);
    profile.reset();
    body.apply(in);
    profile.print("1.3B 480p×81, batch 1, rank-32 adapter on every attention and FFN linear");
  }

  private float median(String what, int iterations, Runnable work) {
    System.out.println("    " + what + ":");
    return Bench.median(gpu, iterations, work);
  }

  private void row(String text) {
    System.out.println("ROW " + text);
    rows.add(text);
  }
}
