package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The CUDA {@code addLowRank} and {@code linearLowRank} against the CPU backend's row-by-row
 * default, on rows mixing different ranks, stacked updates, an empty row, and all rows alike: in
 * the F32 mode within 1e-5 of the output's largest magnitude (as every op of {@code
 * CudaOpsParityTest}), in the BF16 mode within relative L2 1e-2; both the unmerged path (few
 * tokens) and the merged one (many), each checked to be the one that ran. Recorded into a CUDA
 * graph, both replay bit-identical to eager runs for new inputs.
 */
@Tag("gpu")
class LowRankGpuTest {
  private static final Backend CPU = new CpuBackend(2);
  private static final int IN = 64, OUT = 48;

  /** Adapters' factors by name: rank, then down [r, IN] and up [OUT, r] on the host. */
  private static final Map<String, Tensor[]> FACTORS = new HashMap<>();

  static {
    int[] ranks = {4, 8, 16};
    for (int i = 0; i < ranks.length; i++) {
      FACTORS.put(
          "abc".substring(i, i + 1),
          new Tensor[] {
            RandomWeights.uniform(100 + i, 0.3f, ranks[i], IN),
            RandomWeights.uniform(200 + i, 0.3f, OUT, ranks[i])
          });
    }
  }

  /** Row specs: per row, adapter names with scales ("a:0.7 b:-1.3"; "" for none). */
  private static final List<String> MIXED = List.of("a:0.7", "a:0.7 b:-1.3", "", "c:2");

  private static final List<String> ALIKE = List.of("a:0.7 b:-1.3", "a:0.7 b:-1.3", "a:0.7 b:-1.3");
  private static final List<String> ONE = List.of("c:1.5", "c:1.5");

  @AfterEach
  void clearGraphs() {
    Gpu.backend().clearGraphs();
    Gpu.bf16().clearGraphs();
  }

  /**
   * The rows of {@code spec} on {@code backend}, each factor uploaded once in {@code dtype} (rows
   * alike share the very tensors, as an adapter's rows do).
   */
  private static List<List<LowRank>> rows(Backend backend, DType dtype, List<String> spec) {
    Map<String, Tensor[]> uploaded = new HashMap<>();
    List<List<LowRank>> rows = new ArrayList<>();
    for (String row : spec) {
      List<LowRank> own = new ArrayList<>();
      for (String item : row.isEmpty() ? new String[0] : row.split(" ")) {
        String[] nameScale = item.split(":");
        Tensor[] f =
            uploaded.computeIfAbsent(
                nameScale[0],
                n ->
                    new Tensor[] {
                      backend.upload(FACTORS.get(n)[0], dtype),
                      backend.upload(FACTORS.get(n)[1], dtype)
                    });
        own.add(new LowRank(f[0], f[1], Float.parseFloat(nameScale[1])));
      }
      rows.add(own);
    }
    return rows;
  }

  private record Case(List<String> spec, int tokens, boolean gelu) {}

  /** The op under test on one backend, inputs uploaded in {@code dtype}. */
  private static Tensor run(Backend b, DType dtype, Case c, boolean fused, long seed) {
    int batch = c.spec().size();
    Tensor x = b.upload(RandomWeights.uniform(seed, 1f, batch, c.tokens(), IN), dtype);
    Tensor w = b.upload(RandomWeights.uniform(seed + 1, 0.2f, OUT, IN), dtype);
    Tensor bias = b.upload(RandomWeights.uniform(seed + 2, 0.5f, OUT), dtype);
    List<List<LowRank>> rows = rows(b, dtype, c.spec());
    if (fused) {
      return b.linearLowRank(x, w, bias, c.gelu(), rows);
    }
    Tensor y = b.addLowRank(b.linear(x, w, bias), x, rows);
    return c.gelu() ? b.gelu(y, true) : y;
  }

  private static void compare(String what, Case c, boolean fused, String path) {
    Tensor expected = CPU.download(run(CPU, DType.F32, c, fused, 7));
    // The factors' in/out and the tokens decide the path, not the values: any upload will do.
    CudaBackend f32 = Gpu.backend();
    Tensor x = f32.upload(RandomWeights.uniform(1, 1f, c.spec().size(), c.tokens(), IN), DType.F32);
    Tensor w = f32.upload(RandomWeights.uniform(2, 1f, OUT, IN), DType.F32);
    String ran = f32.lowRankPath(x, w, c.gelu(), rows(f32, DType.F32, c.spec()));
    assertTrue(ran.startsWith(path), what + " ran " + ran + ", expected " + path);

    Tensor exact = f32.download(run(f32, DType.F32, c, fused, 7));
    assertArrayEquals(expected.shape(), exact.shape(), what + " shape");
    float[] e = expected.toFloatArray(), a = exact.toFloatArray();
    double scale = 1e-30, worst = 0;
    for (int i = 0; i < e.length; i++) {
      scale = Math.max(scale, Math.abs(e[i]));
      worst = Math.max(worst, Math.abs(e[i] - a[i]));
    }
    double bf16 =
        RelativeL2.of(Gpu.bf16().download(run(Gpu.bf16(), DType.BF16, c, fused, 7)), expected);
    System.out.printf(
        "  %-44s %s: F32 max|diff|/max|ref| %.2e (bound 1e-5), BF16 rel L2 %.2e (bound 1e-2)%n",
        what, ran, worst / scale, bf16);
    assertTrue(worst <= 1e-5 * scale, what + " F32: max diff " + worst + " vs scale " + scale);
    assertTrue(bf16 <= 1e-2, what + " BF16: relative L2 " + bf16);
  }

  @Test
  void mixedRowsMatchTheCpu() {
    compare("addLowRank, mixed rows", new Case(MIXED, 5, false), false, "unmerged, 4 block(s)");
    compare("linearLowRank, mixed rows, few tokens", new Case(MIXED, 5, true), true, "unmerged");
    compare(
        "linearLowRank, mixed rows, many tokens", new Case(MIXED, 300, false), true, "merged, 4");
    compare(
        "linearLowRank + GELU, mixed, many tokens", new Case(MIXED, 300, true), true, "merged, 4");
  }

  @Test
  void rowsAlikeMatchTheCpu() {
    compare("addLowRank, rows alike, stacked", new Case(ALIKE, 5, false), false, "unmerged, 1");
    compare("addLowRank, one shared update", new Case(ONE, 5, false), false, "unmerged, 1");
    compare(
        "linearLowRank, rows alike, many tokens", new Case(ALIKE, 300, true), true, "merged, 1");
    compare("linearLowRank, one shared update", new Case(ONE, 300, false), true, "merged, 1");
  }

  @Test
  void anEmptyRowIsLeftExactlyAsItWas() {
    CudaBackend gpu = Gpu.bf16();
    Tensor x = gpu.upload(RandomWeights.uniform(3, 1f, 4, 5, IN), DType.BF16);
    Tensor w = gpu.upload(RandomWeights.uniform(4, 0.2f, OUT, IN), DType.BF16);
    float[] plain = gpu.download(gpu.linear(x, w, null).slice(0, 2, 3)).toFloatArray();
    Tensor adapted = gpu.addLowRank(gpu.linear(x, w, null), x, rows(gpu, DType.BF16, MIXED));
    assertArrayEquals(plain, gpu.download(adapted.slice(0, 2, 3)).toFloatArray());
  }

  @Test
  void replaysEqualEagerRuns() {
    for (CudaBackend gpu : List.of(Gpu.backend(), Gpu.bf16())) {
      DType dtype = gpu.activationDType();
      for (int tokens : new int[] {5, 300}) {
        Tensor w = gpu.upload(RandomWeights.uniform(5, 0.2f, OUT, IN), dtype);
        Tensor bias = gpu.upload(RandomWeights.uniform(6, 0.5f, OUT), dtype);
        List<List<LowRank>> rows = rows(gpu, dtype, MIXED);
        Function<List<Tensor>, Tensor> body =
            in -> {
              Tensor x = in.get(0);
              Tensor fused = gpu.linearLowRank(x, w, bias, true, rows);
              return gpu.concat(List.of(fused, gpu.addLowRank(gpu.linear(x, w, bias), x, rows)), 2);
            };
        List<Tensor> first =
            List.of(gpu.upload(RandomWeights.uniform(8, 1f, 4, tokens, IN), dtype));
        List<Tensor> second =
            List.of(gpu.upload(RandomWeights.uniform(9, 1f, 4, tokens, IN), dtype));
        GraphKey key =
            GraphKey.of("test", "lora", "none", "LOW_RANK", dtype.toString(), "single", first)
                .withAdapters("mixed");
        gpu.replayable(key, first, body); // eager, then recorded
        Tensor replayed = gpu.replayable(key, second, body);
        assertTrue(gpu.graphStats().replays() > 0, "the second call replays");
        assertArrayEquals(
            gpu.download(body.apply(second)).toFloatArray(),
            gpu.download(replayed).toFloatArray(),
            dtype + " replay at " + tokens + " tokens");
      }
    }
  }
}
