package dev.stepweave.models.wan.cache;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.media.Psnr;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The measurements of docs/caching.md, run only on request ({@code -Dstepweave.measure=true}): the
 * embedded model deepened to {@value #LAYERS} blocks (its two blocks repeated), uncached against
 * F8B0- and F1B0-style block caches and the step cache, each run {@value #REPEATS} times.
 */
class BlockCacheMeasurement {
  static final int LAYERS = 16;

  @TempDir Path tmp;

  @Test
  void measure() throws Exception {
    assumeTrue(Boolean.getBoolean("stepweave.measure"), "set -Dstepweave.measure=true");
    Path deep = deepen(EmbeddedWan.ensure(tmp.resolve("home")), tmp.resolve("deep"));
    Extensions deployed =
        Extensions.builder()
            .enable(BlockCachePlugin.DBCACHE)
            .enable(BlockCachePlugin.FBCACHE)
            .enable(StepCachePlugin.STEPCACHE)
            .build();
    Map<String, Map<String, Map<String, String>>> settings = new LinkedHashMap<>();
    settings.put("uncached", Map.of());
    for (String t : List.of("0.3", "0.6")) {
      settings.put("F8B0 t=" + t, Map.of("dbcache", Map.of("fn", "8", "threshold", t)));
      settings.put("F1B0 t=" + t, Map.of("fbcache", Map.of("threshold", t)));
    }
    settings.put(
        "F1B0 t=0.6 TaylorSeer 2",
        Map.of("fbcache", Map.of("threshold", "0.6", "taylorseer_order", "2")));
    for (String t : List.of("0.1", "0.2", "0.5")) {
      settings.put("stepcache t=" + t, Map.of("stepcache", Map.of("threshold", t)));
    }
    Map<String, List<Double>> stepTimes = new LinkedHashMap<>();
    Map<String, GenerationResult> results = new LinkedHashMap<>();
    try (WanModel model = WanModel.load(deep, new CpuBackend());
        Engine engine = new Engine(model, EngineConfig.defaults(), deployed)) {
      for (int i = 0; i < 3; i++) {
        run(engine, Map.of()); // warm the JIT
      }
      // Round-robin over the settings, so that load changing over time spreads over all of them.
      for (int rep = 0; rep < REPEATS; rep++) {
        for (var e : settings.entrySet()) {
          GenerationResult r = run(engine, e.getValue());
          stepTimes
              .computeIfAbsent(e.getKey(), k -> new ArrayList<>())
              .add(r.loopTimings().get("denoise").toNanos() / 1e9 / STEPS);
          results.put(e.getKey(), r);
        }
      }
    }
    System.out.println(
        "| setting | blocks skipped | steps reused | denoise s/step (median of "
            + REPEATS
            + ") | saved | latent rel. L2 error | frames PSNR dB |");
    System.out.println("|---|---|---|---|---|---|---|");
    GenerationResult base = results.get("uncached");
    double baseStep = median(stepTimes.get("uncached"));
    for (var e : results.entrySet()) {
      GenerationResult r = e.getValue();
      Map<String, Long> report = r.loopResults().get("denoise").report();
      long skipped = sum(report, ".skipped_blocks");
      long blocks = sum(report, ".blocks");
      long reused = sum(report, "stepcache.cached_steps");
      double step = median(stepTimes.get(e.getKey()));
      System.out.printf(
          Locale.ROOT,
          "| %s | %s | %d/%d | %.4f | %.0f%% | %.2e | %s |%n",
          e.getKey(),
          blocks == 0
              ? "—"
              : String.format(
                  Locale.ROOT, "%d/%d (%.0f%%)", skipped, blocks, 100.0 * skipped / blocks),
          reused,
          STEPS,
          step,
          100 * (1 - step / baseStep),
          relL2(latents(r), latents(base)),
          r == base
              ? "—"
              : String.format(Locale.ROOT, "%.1f", Psnr.between(frames(r), frames(base))));
    }
  }

  static final int REPEATS = 3;

  static long sum(Map<String, Long> report, String suffix) {
    return report.entrySet().stream()
        .filter(x -> x.getKey().endsWith(suffix))
        .mapToLong(Map.Entry::getValue)
        .sum();
  }

  static double median(List<Double> values) {
    List<Double> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  static final int STEPS = 20;

  static GenerationResult run(Engine engine, Map<String, Map<String, String>> plugins)
      throws Exception {
    var d = EmbeddedWan.DEFAULTS;
    Request r =
        Request.builder(
                TaskType.T2V,
                new DiffusionParams(
                    STEPS,
                    d.guidance(),
                    42,
                    d.width(),
                    d.height(),
                    d.frames(),
                    d.fps(),
                    "",
                    Optional.empty(),
                    Optional.empty()))
            .id("measure-" + System.nanoTime())
            .prompt("a red ball bouncing on a wooden floor")
            .output(OutputSpec.WITH_LATENTS)
            .plugins(plugins)
            .build();
    return engine.submit(r).result().get(600, TimeUnit.SECONDS);
  }

  static float[] latents(GenerationResult r) {
    return r.artifact(Artifact.LatentArtifact.class).latents().toFloatArray();
  }

  static Tensor frames(GenerationResult r) {
    return r.artifact(Artifact.VideoArtifact.class).frames();
  }

  static double relL2(float[] a, float[] b) {
    double num = 0;
    double den = 0;
    for (int i = 0; i < a.length; i++) {
      num += (a[i] - b[i]) * (double) (a[i] - b[i]);
      den += b[i] * (double) b[i];
    }
    return Math.sqrt(num / den);
  }

  /** A copy of a checkpoint whose transformer has {@value #LAYERS} blocks, cycling its own. */
  static Path deepen(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path f : files.toList()) {
        Path target = to.resolve(from.relativize(f).toString());
        if (Files.isDirectory(f)) {
          Files.createDirectories(target);
        } else {
          Files.copy(f, target);
        }
      }
    }
    Path config = to.resolve("transformer/config.json");
    ObjectMapper json = new ObjectMapper();
    ObjectNode cfg = (ObjectNode) json.readTree(config.toFile());
    int layers = cfg.get("num_layers").intValue();
    cfg.put("num_layers", LAYERS);
    json.writeValue(config.toFile(), cfg);
    Path weights = to.resolve("transformer/diffusion_pytorch_model.safetensors");
    Map<String, Tensor> out = new LinkedHashMap<>();
    try (SafetensorsFile f = SafetensorsFile.open(weights)) {
      for (String key : f.keys()) {
        Tensor t = f.load(key).toHost(f.load(key).dtype());
        if (key.startsWith("blocks.")) {
          String rest = key.substring(key.indexOf('.', 7));
          int block = Integer.parseInt(key.substring(7, key.indexOf('.', 7)));
          for (int i = block; i < LAYERS; i += layers) {
            out.put("blocks." + i + rest, t);
          }
        } else {
          out.put(key, t);
        }
      }
    }
    Safetensors.write(weights, out, Map.of("format", "pt"));
    return to;
  }
}
