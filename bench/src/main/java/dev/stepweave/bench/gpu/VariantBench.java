package dev.stepweave.bench.gpu;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;

/**
 * Issue 12's benchmarks at the released configurations with random weights, BF16 mode, CUDA-event
 * medians after one warm-up: the Wan2.2-TI2V-5B DiT forward at 720p×121 (latent {@code [1, 48, 31,
 * 44, 80]}, 27 280 tokens, text 512, per-token timesteps with the first latent frame's tokens at 0
 * as in TI2V image mode), the Wan2.2 VAE decode of the same latents to 121 frames of 704×1280 (F32
 * latents as the product decodes them — an F32 stream, BF16 convolution operands — or, with
 * vae-bf16, BF16 latents, which keep the whole stream BF16; each with its golden tiny decode's
 * error), and the Wan2.1-I2V-14B DiT forward at 480p×81 (latent {@code [1, 36, 21, 60, 104]}: 16
 * noisy + 20 condition channels, 257 CLIP image tokens of width 1280, text 512). {@code
 * VariantBench profile} times the 5B forward op by op ({@link OpProfile}). Lines {@code ROW what |
 * ours}. Parts, one argument each: {@code all} (the default: ti2v, vae, i2v), {@code ti2v}, {@code
 * profile}, {@code vae}, {@code vae-bf16}, {@code i2v}, {@code vae-paths} (a two-latent-frame 720p
 * decode, then the convolution engines cuDNN was given per shape, with their timings), {@code
 * vae-profile} (a 17-frame 720p decode of F32 latents op by op, then the engines of every shape),
 * {@code vae21} (the Wan2.1 VAE's 480p×81 decode, F32 and BF16 activations).
 */
public final class VariantBench {
  private static final int[] TI2V_LATENTS = {1, 48, 31, 44, 80};
  private static final int[] I2V_LATENTS = {1, 36, 21, 60, 104};
  private static final int[] WAN21_LATENTS = {1, 16, 21, 60, 104};

  /** A VAE's released configuration and the golden checkpoint whose recorded decode judges it. */
  private record VaeVariant(String name, WanVaeConfig config, String golden) {}

  private static final VaeVariant WAN22_VAE =
      new VaeVariant("Wan2.2 VAE", wan22VaeConfig(), "wan22-ti2v-tiny");
  private static final VaeVariant WAN21_VAE =
      new VaeVariant("Wan2.1 VAE", Bench.vaeConfig(), "wan21-tiny");
  private static final int IMAGE_TOKENS = 257;
  private static final int IMAGE_DIM = 1280;
  private static final int TEXT_TOKENS = 512;
  private static final float TIMESTEP = 500f;

  private final CudaBackend gpu;

  private VariantBench(CudaBackend gpu) {
    this.gpu = gpu;
  }

  public static void main(String[] args) {
    VariantBench bench = new VariantBench(Bench.openBf16OrExit());
    System.out.println("== " + bench.gpu.name());
    // One argument per part (run.sh's MAINS="VariantBench:i2v,vae-paths" passes two).
    Set<String> parts = args.length > 0 ? Set.of(args) : Set.of("all");
    boolean all = parts.contains("all");
    if (all || parts.contains("ti2v")) {
      bench.ti2vForward();
    }
    if (parts.contains("profile")) {
      bench.ti2vProfile();
    }
    if (all || parts.contains("vae")) {
      bench.vaeDecode(WAN22_VAE, DType.F32, TI2V_LATENTS, 3);
    }
    if (parts.contains("vae-bf16")) {
      bench.vaeDecode(WAN22_VAE, DType.BF16, TI2V_LATENTS, 3);
    }
    if (parts.contains("vae21")) {
      bench.vaeDecode(WAN21_VAE, DType.F32, WAN21_LATENTS, 3);
      bench.vaeDecode(WAN21_VAE, DType.BF16, WAN21_LATENTS, 3);
    }
    if (all || parts.contains("i2v")) {
      bench.i2vForward();
    }
    if (parts.contains("vae-profile")) {
      bench.vaeProfile(DType.F32);
    }
    if (parts.contains("vae-paths")) {
      // Two latent frames at 720p: every convolution shape of the decode, once each, with the
      // engine cuDNN was given and its timing.
      bench.vaeDecode(WAN22_VAE, DType.F32, new int[] {1, 48, 2, 44, 80}, 1);
      System.out.println("  conv3d paths:\n" + bench.gpu.conv3dPaths().indent(4));
    }
    System.exit(0);
  }

  /** Per-token timesteps {@code [1, L]}: the first latent frame's tokens at 0, the rest at t. */
  private static Tensor perTokenTimesteps(int[] latents) {
    int frameTokens = latents[3] / 2 * (latents[4] / 2);
    float[] t = new float[latents[2] * frameTokens];
    Arrays.fill(t, frameTokens, t.length, TIMESTEP);
    return Tensor.of(t, 1, t.length);
  }

  private record Inputs(Tensor latents, Tensor timestep, Tensor text, Tensor image) {}

  private Inputs ti2vInputs() {
    return new Inputs(
        gpu.upload(RandomWeights.uniform(1, 1f, TI2V_LATENTS), DType.F32),
        gpu.upload(perTokenTimesteps(TI2V_LATENTS), DType.F32),
        gpu.upload(RandomWeights.uniform(2, 1f, 1, TEXT_TOKENS, 4096), DType.F32),
        null);
  }

  private void ti2vForward() {
    WanTransformer dit = Bench.randomDit(gpu, "ti2v-5b");
    forward(dit, "Wan2.2-TI2V-5B DiT 720p×121 (27 280 tokens, per-token timesteps)", ti2vInputs());
  }

  private void i2vForward() {
    WanTransformer dit = Bench.randomDit(gpu, "i2v-14b");
    Inputs in =
        new Inputs(
            gpu.upload(RandomWeights.uniform(1, 1f, I2V_LATENTS), DType.F32),
            gpu.upload(Tensor.full(TIMESTEP, 1), DType.F32),
            gpu.upload(RandomWeights.uniform(2, 1f, 1, TEXT_TOKENS, 4096), DType.F32),
            gpu.upload(RandomWeights.uniform(3, 1f, 1, IMAGE_TOKENS, IMAGE_DIM), DType.F32));
    forward(dit, "Wan2.1-I2V-14B DiT 480p×81 (32 760 tokens, 257 image tokens)", in);
  }

  private void forward(WanTransformer dit, String what, Inputs in) {
    gpu.synchronize();
    gpu.resetPeaks();
    Tensor[] out = new Tensor[1];
    float ms =
        Bench.median(
            gpu,
            3,
            () ->
                out[0] =
                    dit.forward(in.latents(), in.timestep(), in.text(), in.image(), TapSink.NONE));
    System.out.printf(
        "ROW %s | %.0f ms | peak live %.1f GB, held %.1f GB, out %s%n",
        what,
        ms,
        gpu.peakLiveBytes() / 1e9,
        gpu.peakReservedBytes() / 1e9,
        Arrays.toString(out[0].shape()));
  }

  /** The 5B forward op by op, after a profiled warm-up (its own copy of the weights). */
  private void ti2vProfile() {
    System.gc();
    OpProfile profile = OpProfile.over(gpu);
    WanTransformer dit = Bench.randomDit(profile.backend(), gpu, "ti2v-5b");
    Inputs in = ti2vInputs();
    dit.forward(in.latents(), in.timestep(), in.text(), TapSink.NONE);
    profile.reset();
    dit.forward(in.latents(), in.timestep(), in.text(), TapSink.NONE);
    profile.print("Wan2.2-TI2V-5B 720p×121, per-token timesteps");
  }

  /** A 17-frame 720p Wan2.2 VAE decode op by op, after a profiled warm-up. */
  private void vaeProfile(DType activations) {
    System.gc();
    OpProfile profile = OpProfile.over(gpu);
    WanVaeConfig cfg = WAN22_VAE.config();
    WanVae vae =
        WanVae.load(
            cfg,
            new Weights(
                new RandomWeights(WanVaeShapes.of(cfg), DType.F32, 0.05f),
                profile.backend(),
                DType.F32));
    Tensor latents = gpu.upload(RandomWeights.uniform(4, 1f, 1, 48, 5, 44, 80), activations);
    vae.decode(latents);
    profile.reset();
    vae.decode(latents);
    profile.print("Wan2.2 VAE decode [1, 48, 5, 44, 80] (" + activations + " activations)");
    System.out.println("  conv3d paths:\n" + gpu.conv3dPaths().indent(4));
  }

  /**
   * A VAE decode of latents {@code shape} (the 5B's 31 latent frames of 44×80 to 121 frames of
   * 704×1280; the Wan2.1 VAE's 21 of 60×104 to 81 frames of 480×832), untiled, stepped as in
   * production: F32 weights, latents in {@code activations}, which every activation then keeps
   * (BF16: every convolution on BF16 data with cuDNN's BF16 copy of its kernel). Before timing a
   * BF16 decode, the variant's golden tiny VAE decodes its recorded latents the same way and prints
   * its relative L2 error against the recording, since the BF16 mode keeps only what stays within
   * 1e-2.
   */
  private void vaeDecode(VaeVariant variant, DType activations, int[] shape, int iterations) {
    goldenDecodeError(variant.golden(), activations);
    System.gc();
    WanVaeConfig cfg = variant.config();
    // F32 weights as WanModel holds a VAE's; the latents' dtype sets the activations'.
    WanVae vae =
        WanVae.load(
            cfg,
            new Weights(new RandomWeights(WanVaeShapes.of(cfg), DType.F32, 0.05f), gpu, DType.F32));
    Tensor latents = gpu.upload(RandomWeights.uniform(4, 1f, shape), activations);
    gpu.synchronize();
    gpu.resetPeaks();
    Tensor[] video = new Tensor[1];
    float ms = Bench.median(gpu, iterations, () -> video[0] = vae.decode(latents));
    System.out.printf(
        "ROW %s decode %s latents (%s activations) | %.0f ms | peak live %.1f GB, held"
            + " %.1f GB, out %s %s%n",
        variant.name(),
        Arrays.toString(shape),
        activations,
        ms,
        gpu.peakLiveBytes() / 1e9,
        gpu.peakReservedBytes() / 1e9,
        video[0].dtype(),
        Arrays.toString(video[0].shape()));
  }

  private void goldenDecodeError(String checkpoint, DType activations) {
    Path golden = Path.of(System.getProperty("stepweave.golden", "testdata/golden"));
    Path dir = golden.resolve(checkpoint + "/vae");
    try (SafetensorsFile weights =
            SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
        SafetensorsFile rec =
            SafetensorsFile.open(golden.resolve(checkpoint + "-expected/vae.safetensors"))) {
      WanVae vae =
          WanVae.load(
              WanVaeConfig.read(dir.resolve("config.json")), new Weights(weights, gpu, DType.F32));
      float[] got = gpu.download(vae.decode(gpu.upload(rec.load("z"), activations))).toFloatArray();
      float[] want = rec.loadF32("decoded").toFloatArray();
      double diff = 0, norm = 0;
      for (int i = 0; i < want.length; i++) {
        diff += (got[i] - (double) want[i]) * (got[i] - (double) want[i]);
        norm += (double) want[i] * want[i];
      }
      System.out.printf(
          "ROW golden %s VAE decoded from %s latents (%s): relative L2 | %.2e"
              + " (the BF16 mode's bound 1e-2)%n",
          checkpoint, activations, vae.precision(), Math.sqrt(diff / norm));
    }
  }

  /**
   * The released Wan2.2 VAE's {@code config.json} (Wan2.2-TI2V-5B-Diffusers); the latent statistics
   * are placeholders, which a decode of raw latents never reads.
   */
  static WanVaeConfig wan22VaeConfig() {
    ObjectNode json = new ObjectMapper().createObjectNode();
    json.put("base_dim", 160);
    json.put("decoder_base_dim", 256);
    json.put("z_dim", 48);
    json.putArray("dim_mult").add(1).add(2).add(4).add(4);
    json.put("num_res_blocks", 2);
    json.putArray("attn_scales");
    json.putArray("temperal_downsample").add(false).add(true).add(true);
    json.put("dropout", 0.0);
    json.put("is_residual", true);
    json.put("in_channels", 12);
    json.put("out_channels", 12);
    json.put("patch_size", 2);
    json.put("scale_factor_spatial", 16);
    json.put("scale_factor_temporal", 4);
    ArrayNode mean = json.putArray("latents_mean");
    ArrayNode std = json.putArray("latents_std");
    for (int i = 0; i < 48; i++) {
      mean.add(0.0);
      std.add(1.0);
    }
    return WanVaeConfig.fromJson(json);
  }
}
