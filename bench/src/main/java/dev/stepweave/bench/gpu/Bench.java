package dev.stepweave.bench.gpu;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.driver.CudaLibraries;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * The performance table of issue 5 on the GPU, random BF16 weights, CUDA-event timings (median of
 * the timed runs after one warm-up). {@code Bench quick} times small shapes only (a smoke test);
 * {@code Bench all} times attention alone at the 480p shape, the Wan2.1-1.3B DiT forward at 480p
 * (batch 1 and 2) and 720p, the 14B at 480p, and the VAE decode of 81 frames at 480p ({@code Bench
 * vae} alone). Each forward releases its activations block by block (the forward's own {@code
 * Backend.chain}); peak memory is the allocator's high-water mark of live tensors and of memory
 * held from the driver, weights included.
 */
public final class Bench {
  private record Row(String what, String ours, String reference) {}

  private final CudaBackend gpu;
  private final List<Row> rows = new ArrayList<>();

  private Bench(CudaBackend gpu) {
    this.gpu = gpu;
  }

  public static void main(String[] args) {
    Bench bench = new Bench(openBf16OrExit());
    System.out.println("== " + bench.gpu.name());
    // One mode or several, comma-separated: all, quick, attention, dit, vae, profile, cfg.
    Set<String> modes = Set.of((args.length > 0 ? args[0] : "quick").split(","));
    if (modes.contains("all") || modes.contains("attention")) {
      bench.attention(1, 32760, 12, 128, 10, "11.0 ms (cuDNN) / 18.3 ms (flash)");
    }
    if (modes.contains("all") || modes.contains("dit")) {
      WanTransformer small = bench.load("1.3b");
      bench.dit(small, "1.3B 480p×81, batch 1", 1, 21, 60, 104, 5, "603 ms (516 compiled)");
      // Batch 2 is the guided step's forward (both branches in one call).
      bench.dit(small, "1.3B 480p×81, batch 2", 2, 21, 60, 104, 3, "1200 ms");
      if (modes.contains("all")) {
        bench.dit(small, "1.3B 720p×81, batch 1", 1, 21, 90, 160, 3, "2399 ms");
      }
      small = null;
      System.gc();
    }
    if (modes.contains("all")) {
      WanTransformer big = bench.load("14b");
      bench.dit(big, "14B 480p×81, batch 1", 1, 21, 60, 104, 3, "3179 ms");
      big = null;
      System.gc();
    }
    if (modes.contains("all") || modes.contains("vae")) {
      bench.vaeDecode(21, 60, 104, 3, "1834 ms");
    }
    if (modes.contains("profile")) {
      bench.profile();
    }
    if (modes.contains("cfg")) {
      bench.denoise(bench.load("1.3b"), 50, 5f);
    }
    if (modes.contains("quick")) {
      bench.attention(2, 300, 3, 64, 3, "–");
      bench.dit(bench.load("small"), "1.3B widths, 2 layers, small", 1, 5, 16, 16, 3, "–");
    }
    System.out.println();
    System.out.println("| what | ours | reference (PyTorch 2.11 eager, H200) |");
    System.out.println("|---|---|---|");
    for (Row r : bench.rows) {
      System.out.println("| " + r.what() + " | " + r.ours() + " | " + r.reference() + " |");
    }
    System.exit(0);
  }

  /**
   * Attention alone, timed twice: through the backend's dispatch (cuDNN's fused attention where it
   * takes the shape, named in the row) and through our flash kernel alone.
   */
  private void attention(int b, int l, int h, int d, int iterations, String reference) {
    Tensor q = gpu.upload(RandomWeights.uniform(11, 1f, b, l, h, d), DType.BF16);
    Tensor k = gpu.upload(RandomWeights.uniform(12, 1f, b, l, h, d), DType.BF16);
    Tensor v = gpu.upload(RandomWeights.uniform(13, 1f, b, l, h, d), DType.BF16);
    float scale = (float) (1 / Math.sqrt(d));
    String what = "attention alone " + Arrays.toString(new int[] {b, h, l, d}) + " BF16";
    float dispatched, flash;
    // Each run's output is garbage at once: released here, not left to inflate later peaks.
    try (MemoryScope scope = gpu.openScope()) {
      dispatched =
          median(iterations, () -> scope.releaseExcept(gpu.attention(q, k, v, null, scale)));
      flash = median(iterations, () -> scope.releaseExcept(gpu.flashAttention(q, k, v, scale)));
      scope.releaseExcept();
    }
    // Asked after the runs: the first one chose cuDNN's plan by timing, which the path names.
    String path = gpu.attentionPath(q, k, v);
    System.out.println("  attention path: " + path);
    add(what + ", " + path, timing(dispatched, b, l, h, d), reference);
    add(what + ", flash.cu alone", timing(flash, b, l, h, d), reference);
  }

  private static String timing(float ms, int b, int l, int h, int d) {
    double tflops = 4.0 * b * h * (double) l * l * d / (ms * 1e-3) / 1e12;
    return String.format("%.1f ms (%.0f TFLOP/s)", ms, tflops);
  }

  private WanTransformer load(String size) {
    return randomDit(gpu, size);
  }

  /**
   * The benchmarks' backend: device 0 in {@link Precision#BF16}; without usable CUDA libraries the
   * one-line notice and exit status 2.
   */
  static CudaBackend openBf16OrExit() {
    return openOrExit(Precision.BF16);
  }

  /** A CUDA backend in {@code precision}, or exit 2 with the reason when there is none. */
  static CudaBackend openOrExit(Precision precision) {
    CudaLibraries.Probe probe = CudaLibraries.probe();
    if (!probe.found()) {
      System.out.println(probe.notice());
      System.exit(2);
    }
    probe.libraries().get().makeCurrent();
    return CudaBackend.open(0, precision);
  }

  /** A DiT of {@link #config} {@code size} with random BF16 weights on {@code gpu}. */
  static WanTransformer randomDit(CudaBackend gpu, String size) {
    return randomDit(gpu, gpu, size);
  }

  /** The DiT with random weights, computing through {@code backend} (which runs on {@code gpu}). */
  static WanTransformer randomDit(Backend backend, CudaBackend gpu, String size) {
    long t0 = System.nanoTime();
    WanTransformerConfig cfg = config(size);
    WanTransformer dit =
        WanTransformer.load(
            cfg,
            new Weights(
                new RandomWeights(WanDitShapes.of(cfg), DType.BF16, 0.02f), backend, DType.BF16));
    gpu.synchronize();
    System.out.printf("  loaded %s in %.1f s%n", size, (System.nanoTime() - t0) / 1e9);
    return dit;
  }

  private void dit(
      WanTransformer dit,
      String what,
      int b,
      int f,
      int h,
      int w,
      int iterations,
      String reference) {
    Tensor latents = gpu.upload(RandomWeights.uniform(1, 1f, b, 16, f, h, w), DType.F32);
    Tensor timestep = gpu.upload(Tensor.full(500f, b), DType.F32);
    Tensor context = gpu.upload(RandomWeights.uniform(2, 1f, b, 512, 4096), DType.F32);
    gpu.synchronize();
    gpu.resetPeaks();
    Tensor[] out = new Tensor[1];
    float ms =
        median(iterations, () -> out[0] = dit.forward(latents, timestep, context, TapSink.NONE));
    long[] mem = gpu.context().memoryInfo();
    float[] sample = gpu.download(out[0]).toFloatArray();
    double sum = 0;
    for (float x : sample) {
      sum += x * x;
    }
    System.out.printf(
        "  %s: out rms %.4f, peak live %.2f GB, peak reserved %.2f GB, device used now %.2f GB%n",
        what,
        Math.sqrt(sum / sample.length),
        gpu.peakLiveBytes() / 1e9,
        gpu.peakReservedBytes() / 1e9,
        (mem[1] - mem[0]) / 1e9);
    add(what, String.format("%.0f ms", ms), reference);
    add(
        what + ": peak device memory (live tensors / held by the allocator)",
        String.format("%.1f / %.1f GB", gpu.peakLiveBytes() / 1e9, gpu.peakReservedBytes() / 1e9),
        b == 1 && h == 60 && what.startsWith("1.3B") ? "6.4 GB" : "–");
    // Each timed shape lists every candidate's time: the heuristic's first (algo 0) is the
    // baseline.
    System.out.println("  GEMM paths so far:\n" + gpu.gemmPaths().indent(4));
  }

  /**
   * Decodes {@code [1, 16, frames, h, w]} latents with the Wan 2.1 VAE (the released config: base
   * width 96, F32 weights; the BF16 mode convolves through cuDNN in BF16) to {@code 4·(frames−1)+1}
   * video frames, untiled, through the production path: each step releases what it made but the
   * frames and the causal caches (its state's {@code Backend.StepMemory}), so the peak is one
   * step's.
   */
  private void vaeDecode(int frames, int h, int w, int iterations, String reference) {
    WanVaeConfig cfg = vaeConfig();
    // The census names the weights' and the latents' blocks too; off while decodes are timed.
    gpu.census(true);
    WanVae vae =
        WanVae.load(
            cfg,
            new Weights(new RandomWeights(WanVaeShapes.of(cfg), DType.F32, 0.05f), gpu, DType.F32));
    // The VAE keeps F32 activations in the BF16 mode (as the reference pipeline's float32 VAE),
    // its convolutions on the tensor cores in TF32.
    Tensor latents = gpu.upload(RandomWeights.uniform(4, 1f, 1, 16, frames, h, w), DType.F32);
    gpu.census(false);
    gpu.synchronize();
    gpu.resetPeaks();
    String what = "VAE decode " + (4 * (frames - 1) + 1) + " frames " + 8 * h + "×" + 8 * w;
    // The first decode times each convolution's cuDNN plans (their workspaces at once); a later
    // one, as every request after the first (or any in a process that finds the on-disk choices),
    // holds only the chosen plan's. Both peaks are reported.
    int[] shape = decodeAndFree(vae, latents);
    gpu.synchronize();
    add(
        what + ", first decode (plans timed): peak device memory (live / held)",
        String.format("%.1f / %.1f GB", gpu.peakLiveBytes() / 1e9, gpu.peakReservedBytes() / 1e9),
        "–");
    gpu.resetPeaks();
    // No scope around the decode itself: it releases step by step, as in production.
    float ms = median(iterations, () -> decodeAndFree(vae, latents));
    System.out.printf("  %s: output %s%n", what, Arrays.toString(shape));
    add(what + " (F32 activations, TF32 convolutions)", String.format("%.0f ms", ms), reference);
    add(
        what + ": peak device memory (live tensors / held by the allocator)",
        String.format("%.1f / %.1f GB", gpu.peakLiveBytes() / 1e9, gpu.peakReservedBytes() / 1e9),
        "–");
    System.out.println("  conv3d paths:\n" + gpu.conv3dPaths().indent(4));
    // One more decode, not timed, that records what holds the live peak.
    gpu.census(true);
    gpu.resetPeaks();
    decodeAndFree(vae, latents);
    gpu.synchronize();
    System.out.printf(
        "  %s: live at the peak (%.2f GB), by allocation site:%n%s",
        what, gpu.peakLiveBytes() / 1e9, gpu.liveAtPeak().indent(4));
    gpu.census(false);
  }

  /**
   * One decode whose video is freed once made, as the decode loop frees its device copy once the
   * video is on the host: the next decode's peak then holds none of this one's.
   */
  private int[] decodeAndFree(WanVae vae, Tensor latents) {
    try (MemoryScope scope = gpu.openScope()) {
      int[] shape = vae.decode(latents).shape();
      scope.releaseExcept();
      return shape;
    }
  }

  /** The released Wan 2.1 VAE's {@code config.json}. */
  static WanVaeConfig vaeConfig() {
    ObjectNode json = new ObjectMapper().createObjectNode();
    json.put("base_dim", 96);
    json.put("z_dim", 16);
    json.putArray("dim_mult").add(1).add(2).add(4).add(4);
    json.put("num_res_blocks", 2);
    json.putArray("attn_scales");
    json.putArray("temperal_downsample").add(false).add(true).add(true);
    json.put("dropout", 0.0);
    return WanVaeConfig.fromJson(json);
  }

  /**
   * A whole classifier-free-guided flow-matching denoise at 480p×81: per step one batch-2 forward
   * (conditional and unconditional text), {@code u + g·(c − u)}, and an Euler step over a linear
   * sigma schedule; timed once with CUDA events after a warm-up forward.
   */
  private void denoise(WanTransformer dit, int steps, float guidance) {
    Tensor x = gpu.upload(RandomWeights.uniform(1, 1f, 1, 16, 21, 60, 104), DType.F32);
    Tensor context = gpu.upload(RandomWeights.uniform(2, 1f, 2, 512, 4096), DType.F32);
    Tensor warm = gpu.upload(RandomWeights.uniform(3, 1f, 2, 16, 21, 60, 104), DType.F32);
    dit.forward(warm, gpu.upload(Tensor.full(999f, 2), DType.F32), context, TapSink.NONE);
    Tensor[] latents = {x};
    float ms =
        gpu.context()
            .time(
                () -> {
                  for (int i = 0; i < steps; i++) {
                    float sigma = 1f - (float) i / steps;
                    float next = 1f - (float) (i + 1) / steps;
                    Tensor pair = gpu.concat(List.of(latents[0], latents[0]), 0);
                    Tensor t = gpu.upload(Tensor.full(sigma * 1000f, 2), DType.F32);
                    Tensor v = dit.forward(pair, t, context, TapSink.NONE);
                    Tensor cond = v.slice(0, 0, 1), uncond = v.slice(0, 1, 2);
                    Tensor guided =
                        gpu.add(uncond, gpu.affine(gpu.sub(cond, uncond), guidance, 0f));
                    latents[0] = gpu.add(latents[0], gpu.affine(guided, next - sigma, 0f));
                  }
                });
    add(
        steps + "-step CFG denoise 1.3B 480p×81 (batch-2 forwards, Euler)",
        String.format("%.1f s (%.0f ms/step)", ms / 1e3, ms / steps),
        "– (≈ 50 × 1200 ms = 60 s implied)");
  }

  /**
   * The 1.3B 480p×81 forward op by op ({@link OpProfile}), after a profiled warm-up, at batch 1 and
   * at the guided step's batch 2.
   */
  private void profile() {
    OpProfile profile = OpProfile.over(gpu);
    WanTransformer dit = randomDit(profile.backend(), gpu, "1.3b");
    for (int batch = 1; batch <= 2; batch++) {
      Tensor latents = gpu.upload(RandomWeights.uniform(1, 1f, batch, 16, 21, 60, 104), DType.F32);
      Tensor t = gpu.upload(Tensor.full(500f, batch), DType.F32);
      Tensor context = gpu.upload(RandomWeights.uniform(2, 1f, batch, 512, 4096), DType.F32);
      dit.forward(latents, t, context, TapSink.NONE);
      profile.reset();
      dit.forward(latents, t, context, TapSink.NONE);
      profile.print("1.3B 480p×81, batch " + batch);
    }
  }

  private float median(int iterations, Runnable work) {
    return median(gpu, iterations, work);
  }

  /**
   * Median CUDA-event milliseconds of {@code iterations} timed runs after one warm-up (the upper
   * middle one for an even count), each run printed.
   */
  static float median(CudaBackend gpu, int iterations, Runnable work) {
    float[] ms = new float[iterations];
    for (int i = -1; i < iterations; i++) {
      float t = gpu.context().time(work);
      System.out.printf("    %s %.2f ms%n", i < 0 ? "warm-up" : "run " + i, t);
      if (i >= 0) {
        ms[i] = t;
      }
    }
    Arrays.sort(ms);
    return ms[iterations / 2];
  }

  private void add(String what, String ours, String reference) {
    System.out.println("ROW " + what + " | " + ours + " | " + reference);
    rows.add(new Row(what, ours, reference));
  }

  /**
   * Wan DiT configurations of the released checkpoints' {@code transformer/config.json}: {@code
   * small} (1.3B widths, 2 layers), {@code 1.3b}, {@code 14b} (Wan2.1 T2V), {@code i2v-14b} (Wan2.1
   * I2V 14B: 36 input channels, CLIP ViT-H image states of width 1280), {@code ti2v-5b} (Wan2.2
   * TI2V 5B: 24 heads, 48 latent channels; its per-token timesteps are an input, not a field), and
   * {@code embedded-gpu}: the embedded default's low-noise DiT (its shipped {@code
   * transformer_2/config.json} since format v6, {@code transformer/config.json} in v5, which the
   * device's package leaves out: six layers at 1×2×2 patches since format v5; four layers before,
   * in the figures measured until run 33).
   */
  static WanTransformerConfig config(String size) {
    boolean big = size.endsWith("14b");
    boolean five = size.equals("ti2v-5b");
    boolean embedded = size.equals("embedded-gpu");
    ObjectNode json = new ObjectMapper().createObjectNode();
    json.put("attention_head_dim", embedded ? 32 : 128);
    json.put("num_attention_heads", embedded ? 4 : big ? 40 : five ? 24 : 12);
    json.put("ffn_dim", embedded ? 512 : big ? 13824 : five ? 14336 : 8960);
    json.put("freq_dim", 256);
    json.put("num_layers", embedded ? 6 : size.equals("small") ? 2 : big ? 40 : 30);
    json.put("text_dim", embedded ? 32 : 4096);
    json.put("in_channels", embedded ? 8 : five ? 48 : size.equals("i2v-14b") ? 36 : 16);
    json.put("out_channels", embedded ? 8 : five ? 48 : 16);
    json.putArray("patch_size").add(1).add(2).add(2);
    json.put("cross_attn_norm", true);
    json.put("qk_norm", "rms_norm_across_heads");
    json.put("eps", 1e-6);
    json.put("rope_max_seq_len", 1024);
    if (size.equals("i2v-14b")) {
      json.put("added_kv_proj_dim", 5120);
      json.put("image_dim", 1280);
    } else {
      json.putNull("added_kv_proj_dim");
      json.putNull("image_dim");
    }
    json.putNull("pos_embed_seq_len");
    return WanTransformerConfig.fromJson(json);
  }
}
