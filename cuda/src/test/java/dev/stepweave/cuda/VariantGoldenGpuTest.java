package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.clip.ClipVisionConfig;
import dev.stepweave.models.clip.ClipVisionEncoder;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.function.Function;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 12's components on the GPU against their goldens, each loaded directly from its golden
 * folder as the CPU parity tests load it: the CLIP vision encoder ({@code image_embeds} from the
 * recorded {@code pixel_values}), the Wan2.1 I2V DiT (image tokens), the Wan2.2 TI2V DiT (per-token
 * timesteps) and the residual Wan2.2 VAE ({@code latent_mean}, {@code decoded}). In the BF16 mode —
 * BF16 weights for the encoder and the transformers, F32 weights and activations for the VAE as
 * {@code WanModel} loads it — within relative L2 1e-2 of the F32 recording; in the F32 mode within
 * the card's max-abs tolerance.
 */
@Tag("gpu")
class VariantGoldenGpuTest {
  private static final Path GOLDEN =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"));
  private static final double BF16_BOUND = 1e-2;
  private static final String IMAGE_STATES = "encoder_hidden_states_image";

  /** The card's max-abs bound for {@code output} ("dit", "vae", "clip"). */
  private static double cardBound(String output) {
    return WanCards.cardFor(DiffusersDirectory.open(GOLDEN.resolve("wan21-tiny")))
        .parity()
        .tolerance(output)
        .bound();
  }

  private static double maxAbs(Tensor actual, Tensor expected) {
    float[] a = actual.toFloatArray(), e = expected.toFloatArray();
    double worst = 0;
    for (int i = 0; i < a.length; i++) {
      worst = Math.max(worst, Math.abs(a[i] - e[i]));
    }
    return worst;
  }

  /**
   * Runs {@code compute} on the BF16 backend with {@code bf16Weights} and on the F32 backend with
   * F32 weights, printing and asserting both bounds for {@code expected}.
   */
  private static void assertBothModes(
      String name, String cardOutput, DType bf16Weights, Tensor expected, ModeRun compute) {
    Tensor bf16 = compute.run(Gpu.bf16(), bf16Weights);
    Tensor f32 = compute.run(Gpu.backend(), DType.F32);
    assertArrayEquals(expected.shape(), bf16.shape(), name + " shape");
    double rel = RelativeL2.of(bf16, expected);
    double abs = maxAbs(f32, expected);
    double bound = cardBound(cardOutput);
    System.out.printf(
        "  %-28s BF16 mode: rel L2 %.2e (bound %.0e); F32 mode: max abs %.2e (the card's %s"
            + " bound %.0e)%n",
        name, rel, BF16_BOUND, abs, cardOutput, bound);
    assertTrue(rel <= BF16_BOUND, name + " BF16 relative L2 " + rel);
    assertTrue(abs <= bound, name + " F32 max abs " + abs);
  }

  /** One component run on a backend with weights of one dtype, downloaded. */
  @FunctionalInterface
  private interface ModeRun {
    Tensor run(CudaBackend gpu, DType weights);
  }

  @Test
  void clipImageEmbedsFromRecordedPixelValues() {
    Path encoder = GOLDEN.resolve("wan21-i2v-tiny/image_encoder");
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-i2v-tiny-expected/clip.safetensors"))) {
      assertBothModes(
          "clip/image_embeds",
          "clip",
          DType.BF16,
          rec.loadF32("image_embeds"),
          (gpu, weights) -> {
            try (SafetensorsFile w = SafetensorsFile.open(encoder.resolve("model.safetensors"))) {
              ClipVisionEncoder clip =
                  ClipVisionEncoder.load(
                      ClipVisionConfig.read(encoder.resolve("config.json")),
                      new Weights(w, gpu, weights));
              return gpu.download(clip.penultimateHiddenState(rec.loadF32("pixel_values")));
            }
          });
    }
  }

  @Test
  void imageToVideoDitWithImageTokens() {
    assertDitRecording("wan21-i2v-tiny");
  }

  @Test
  void perTokenTimestepDit() {
    assertDitRecording("wan22-ti2v-tiny");
  }

  private static void assertDitRecording(String checkpoint) {
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve(checkpoint + "-expected/dit.safetensors"))) {
      Function<Backend, Tensor[]> inputs =
          backend ->
              new Tensor[] {
                upload(backend, rec.load("hidden_states")),
                upload(backend, rec.load("timestep")),
                upload(backend, rec.load("encoder_hidden_states")),
                rec.keys().contains(IMAGE_STATES) ? upload(backend, rec.load(IMAGE_STATES)) : null
              };
      assertBothModes(
          checkpoint + "/dit/out",
          "dit",
          DType.BF16,
          rec.load("out"),
          (gpu, weights) -> ditForward(checkpoint, gpu, weights, inputs.apply(gpu)));
    }
  }

  /**
   * The recordings' 7 text tokens route the image tokens through the text projections (the
   * reference splits [image | text] at its last 512 tokens), so the image projections {@code
   * add_k_proj}/{@code add_v_proj} run only with ≥ 512 text tokens: the golden I2V DiT with 512
   * random text tokens, the GPU against the CPU's F32 forward.
   */
  @Test
  void imageTokenCrossAttentionWithFullTextAgainstTheCpu() {
    String checkpoint = "wan21-i2v-tiny";
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve(checkpoint + "-expected/dit.safetensors"))) {
      Tensor text = RandomWeights.uniform(5, 1f, 2, 512, rec.load("encoder_hidden_states").dim(2));
      Function<Backend, Tensor[]> inputs =
          backend ->
              new Tensor[] {
                upload(backend, rec.load("hidden_states")),
                upload(backend, rec.load("timestep")),
                upload(backend, text),
                upload(backend, rec.load(IMAGE_STATES))
              };
      CpuBackend cpu = new CpuBackend(2);
      Tensor expected = ditForward(checkpoint, cpu, DType.F32, inputs.apply(cpu));
      assertBothModes(
          checkpoint + "/dit/out, 512 text tokens",
          "dit",
          DType.BF16,
          expected,
          (gpu, weights) -> ditForward(checkpoint, gpu, weights, inputs.apply(gpu)));
    }
  }

  private static Tensor upload(Backend backend, Tensor host) {
    return backend.upload(host, DType.F32);
  }

  private static Tensor ditForward(String checkpoint, Backend backend, DType weights, Tensor[] in) {
    Path dir = GOLDEN.resolve(checkpoint).resolve("transformer");
    try (SafetensorsFile ckpt =
        SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"))) {
      WanTransformer dit =
          WanTransformer.load(
              WanTransformerConfig.read(dir.resolve("config.json")),
              new Weights(ckpt, backend, weights));
      return backend.download(dit.forward(in[0], in[1], in[2], in[3], TapSink.NONE));
    }
  }

  @Test
  void wan22VaeEncodeAndDecode() {
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan22-ti2v-tiny-expected/vae.safetensors"))) {
      // The VAE keeps F32 weights and activations in the BF16 mode too (WanModel.computeDType).
      assertBothModes(
          "wan22 vae/latent_mean",
          "vae",
          DType.F32,
          rec.loadF32("latent_mean"),
          (gpu, weights) ->
              vae(gpu, weights, v -> v.encode(upload(gpu, rec.loadF32("video"))).mean()));
      assertBothModes(
          "wan22 vae/decoded",
          "vae",
          DType.F32,
          rec.loadF32("decoded"),
          (gpu, weights) -> vae(gpu, weights, v -> v.decode(upload(gpu, rec.loadF32("z")))));
    }
  }

  private static Tensor vae(CudaBackend gpu, DType weights, Function<WanVae, Tensor> run) {
    Path dir = GOLDEN.resolve("wan22-ti2v-tiny/vae");
    try (SafetensorsFile w =
        SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"))) {
      WanVae vae =
          WanVae.load(WanVaeConfig.read(dir.resolve("config.json")), new Weights(w, gpu, weights));
      return gpu.download(run.apply(vae));
    }
  }
}
