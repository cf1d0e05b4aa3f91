package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.models.wan.transformer.LayerAdapter;
import dev.stepweave.models.wan.transformer.LayerUpdate;
import dev.stepweave.models.wan.transformer.LinearShape;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The tiny golden DiT with random adapters on every adaptable layer, on the GPU in the BF16 mode
 * against the CPU in F32 with the same adapters, within relative L2 1e-2: rows sharing one stacked
 * set, and a batch of four rows with four different adapters, which must also match each row run
 * alone on the GPU. The mixed batch recorded into a CUDA graph replays bit-identical to its eager
 * forward. (Which layers run merged and which unmerged follows their widths and tokens: the tiny
 * model has both.)
 */
@Tag("gpu")
class LoraDitGpuTest {
  private static final Path TINY =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"));
  private static final Backend CPU = new CpuBackend(4);

  private record RandomAdapter(String identity, Map<String, LayerUpdate> layers)
      implements LayerAdapter {}

  /**
   * Rank-{@code rank} factors for every layer of {@code shapes}, on the host, from {@code seed}.
   */
  private static Map<String, Tensor[]> factors(
      Map<String, LinearShape> shapes, int rank, long seed) {
    Map<String, Tensor[]> out = new LinkedHashMap<>();
    long s = seed;
    for (Map.Entry<String, LinearShape> e : shapes.entrySet()) {
      LinearShape l = e.getValue();
      out.put(
          e.getKey(),
          new Tensor[] {
            RandomWeights.uniform(s++, 0.5f, rank, l.in()),
            RandomWeights.uniform(s++, 0.5f, l.out(), rank)
          });
    }
    return out;
  }

  private static LayerAdapter adapter(
      Backend b, String name, Map<String, Tensor[]> factors, float alphaScale) {
    Map<String, LayerUpdate> layers = new LinkedHashMap<>();
    factors.forEach(
        (layer, f) ->
            layers.put(
                layer,
                new LayerUpdate(
                    b.upload(f[0], b.activationDType()),
                    b.upload(f[1], b.activationDType()),
                    alphaScale,
                    null)));
    return new RandomAdapter(name, layers);
  }

  private static WanTransformer dit(Backend b, DType weights) {
    DiffusersDirectory.Component c =
        DiffusersDirectory.open(TINY.resolve("wan21-tiny")).component("transformer");
    return WanTransformer.load(
        WanTransformerConfig.read(c.configFile()), new Weights(c.openWeights(), b, weights));
  }

  /** The golden inputs (2 rows) repeated to {@code batch} rows. */
  private static List<Tensor> inputs(int batch) {
    try (SafetensorsFile rec =
        SafetensorsFile.open(TINY.resolve("wan21-tiny-expected").resolve("dit.safetensors"))) {
      List<Tensor> out = new ArrayList<>();
      for (String name : List.of("hidden_states", "timestep", "encoder_hidden_states")) {
        Tensor t = rec.load(name).toHost(DType.F32);
        List<Tensor> copies = new ArrayList<>();
        for (int i = 0; i < batch / 2; i++) {
          copies.add(t);
        }
        out.add(CPU.contiguous(CPU.concat(copies, 0)));
      }
      return out;
    }
  }

  private static Tensor forward(
      Backend b, WanTransformer dit, List<Tensor> in, AdapterRows adapters) {
    Tensor out =
        dit.forward(
            b.upload(in.get(0), DType.F32),
            b.upload(in.get(1), DType.F32),
            b.upload(in.get(2), DType.F32),
            TapSink.NONE,
            BlockHooks.NONE,
            adapters);
    return b.download(out);
  }

  private static List<Tensor> row(List<Tensor> in, int i) {
    return in.stream().map(t -> CPU.contiguous(t.slice(0, i, i + 1))).toList();
  }

  @Test
  void adaptedForwardsMatchTheCpuAndEachRowAlone() {
    CudaBackend gpu = Gpu.bf16();
    WanTransformer onCpu = dit(CPU, DType.F32), onGpu = dit(gpu, DType.BF16);
    Map<String, LinearShape> shapes = onCpu.adaptableLayers();
    List<Map<String, Tensor[]>> f = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      f.add(factors(shapes, 4 + 4 * i, 1000L * (i + 1)));
    }
    List<LayerAdapter> cpuAdapters = new ArrayList<>(), gpuAdapters = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      float alphaScale = (float) (1 / Math.sqrt(4 + 4 * i));
      cpuAdapters.add(adapter(CPU, "a" + i, f.get(i), alphaScale));
      gpuAdapters.add(adapter(gpu, "a" + i, f.get(i), alphaScale));
    }
    float[] strengths = {1f, 0.7f, -0.6f, 1.2f};

    // Two rows sharing a stacked set (a request's CFG rows).
    List<Tensor> two = inputs(2);
    Tensor cpuShared = forward(CPU, onCpu, two, stacked(cpuAdapters, strengths));
    Tensor plain = forward(CPU, onCpu, two, AdapterRows.NONE);
    double effect = RelativeL2.of(cpuShared, plain);
    assertTrue(effect > 0.05, "the adapters change the output (relative L2 " + effect + ")");
    double shared =
        RelativeL2.of(forward(gpu, onGpu, two, stacked(gpuAdapters, strengths)), cpuShared);

    // Four rows, four different adapters, against the CPU and against each row alone.
    List<Tensor> four = inputs(4);
    Tensor cpuMixed = forward(CPU, onCpu, four, mixed(cpuAdapters, strengths));
    Tensor gpuMixed = forward(gpu, onGpu, four, mixed(gpuAdapters, strengths));
    double mixed = RelativeL2.of(gpuMixed, cpuMixed);
    double worstAlone = 0;
    for (int i = 0; i < 4; i++) {
      AdapterRows one =
          AdapterRows.of(
              List.of(List.of(new AdapterRows.Applied(gpuAdapters.get(i), strengths[i]))));
      Tensor alone = forward(gpu, onGpu, row(four, i), one);
      worstAlone = Math.max(worstAlone, RelativeL2.of(gpuMixed.slice(0, i, i + 1), alone));
    }
    System.out.printf(
        "  adapters change the output by rel L2 %.2f; GPU BF16 vs CPU F32: shared stacked set %.2e,"
            + " 4 rows with 4 adapters %.2e; mixed batch vs each row alone on the GPU: worst %.2e"
            + " (bound 1e-2)%n",
        effect, shared, mixed, worstAlone);
    assertTrue(shared <= 1e-2, "shared set: relative L2 " + shared);
    assertTrue(mixed <= 1e-2, "mixed batch: relative L2 " + mixed);
    assertTrue(worstAlone <= 1e-2, "mixed batch vs rows alone: relative L2 " + worstAlone);
  }

  @Test
  void mixedBatchReplaysAsItRunsEagerly() {
    CudaBackend gpu = Gpu.bf16();
    WanTransformer onGpu = dit(gpu, DType.BF16);
    Map<String, LinearShape> shapes = onGpu.adaptableLayers();
    List<LayerAdapter> adapters = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      adapters.add(adapter(gpu, "r" + i, factors(shapes, 8, 77L * (i + 1)), 0.25f));
    }
    AdapterRows rows = mixed(adapters, new float[] {1f, 0.5f, -1f, 2f});
    List<Tensor> in = inputs(4).stream().map(t -> gpu.upload(t, DType.F32)).toList();
    GraphKey key =
        GraphKey.of("test", "transformer", "denoise", "DIFFUSION_STEP", "bf16", "single", in)
            .withAdapters(rows.composition());
    try {
      Function<List<Tensor>, Tensor> body =
          x -> onGpu.forward(x.get(0), x.get(1), x.get(2), TapSink.NONE, BlockHooks.NONE, rows);
      gpu.replayable(key, in, body); // eager, then recorded
      List<Tensor> next = List.of(gpu.affine(in.get(0), 0.5f, 0.1f), in.get(1), in.get(2));
      Tensor replayed = gpu.replayable(key, next, body);
      assertTrue(gpu.graphStats().replays() > 0, "the second call replays");
      assertArrayEquals(
          gpu.download(body.apply(next)).toFloatArray(), gpu.download(replayed).toFloatArray());
    } finally {
      gpu.clearGraphs();
    }
  }

  /** Every row with all four adapters stacked. */
  private static AdapterRows stacked(List<LayerAdapter> adapters, float[] strengths) {
    List<AdapterRows.Applied> set = new ArrayList<>();
    for (int i = 0; i < adapters.size(); i++) {
      set.add(new AdapterRows.Applied(adapters.get(i), strengths[i]));
    }
    return AdapterRows.of(List.of(set, set));
  }

  /** Row {@code i} with adapter {@code i} alone. */
  private static AdapterRows mixed(List<LayerAdapter> adapters, float[] strengths) {
    List<List<AdapterRows.Applied>> rows = new ArrayList<>();
    for (int i = 0; i < adapters.size(); i++) {
      rows.add(List.of(new AdapterRows.Applied(adapters.get(i), strengths[i])));
    }
    return AdapterRows.of(rows);
  }
}
