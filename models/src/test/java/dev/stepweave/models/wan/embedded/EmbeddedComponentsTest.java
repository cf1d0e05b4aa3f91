package dev.stepweave.models.wan.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.text.PromptTokenizer;
import dev.stepweave.models.text.TextEmbeddings;
import dev.stepweave.models.text.UMT5Config;
import dev.stepweave.models.text.UMT5Encoder;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The generated checkpoint loads strictly with the real component loaders, and one forward of each
 * component at the default generation size gives finite, varied outputs. Each forward's wall time
 * is printed: these are the figures the defaults were sized from.
 */
class EmbeddedComponentsTest {
  private static final int SEQUENCE_LENGTH = EmbeddedWan.MAX_SEQUENCE_LENGTH;

  @TempDir static Path cache;
  static DiffusersDirectory checkpoint;
  static Backend backend;

  @BeforeAll
  static void generate() {
    checkpoint = DiffusersDirectory.open(EmbeddedWan.ensure(cache));
    backend = new CpuBackend();
  }

  @Test
  void theWholeCheckpointLoadsAsAWanModel() {
    try (WanModel wan = WanModel.load(checkpoint.dir(), backend)) {
      assertEquals(EmbeddedConfigs.TEXT_DIM, wan.transformer().config().textDim());
      // The trained DiT works in the trained VAE's latent space.
      assertEquals(wan.vae().config().zDim(), wan.transformer().config().inChannels());
      assertEquals(wan.vae().config().zDim(), wan.transformer().config().outChannels());
    }
  }

  @Test
  void tokenizerLooksUpWordsAndEndsWithEos() {
    try (PromptTokenizer tokenizer =
        PromptTokenizer.load(checkpoint.component("tokenizer").dir())) {
      PromptTokenizer.TokenBatch batch =
          tokenizer.encode(List.of("A red Cat, jumping!", "zzyzx"), 8);
      List<String> vocabulary = WordTokenizer.vocabulary();
      long[] expected = {
        vocabulary.indexOf("a"),
        vocabulary.indexOf("red"),
        vocabulary.indexOf("cat"),
        vocabulary.indexOf(","),
        vocabulary.indexOf("jumping"),
        vocabulary.indexOf("!"),
        WordTokenizer.EOS_ID,
        WordTokenizer.PAD_ID,
        2, // <unk>
        WordTokenizer.EOS_ID,
        0,
        0,
        0,
        0,
        0,
        0
      };
      assertArrayEquals(expected, batch.inputIds().toLongArray());
      assertArrayEquals(
          new long[] {1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0},
          batch.attentionMask().toLongArray());
    }
  }

  @Test
  void textEncoderEncodesPromptsAtTheFullSequenceLength() {
    UMT5Encoder encoder = load("text_encoder", w -> UMT5Encoder.load(umt5Config(), w));
    try (PromptTokenizer tokenizer =
        PromptTokenizer.load(checkpoint.component("tokenizer").dir())) {
      long start = System.nanoTime();
      Tensor embeds =
          TextEmbeddings.encodePrompts(
              tokenizer,
              encoder,
              List.of("a cat walking on the beach at sunset", "blurry, low quality"),
              SEQUENCE_LENGTH);
      float[] values = backend.download(embeds).toFloatArray();
      report("UMT5 encode, 2 prompts x " + SEQUENCE_LENGTH + " tokens", start);

      assertArrayEquals(new int[] {2, SEQUENCE_LENGTH, EmbeddedConfigs.TEXT_DIM}, embeds.shape());
      // The first token's state is a unit-RMS vector (final RMSNorm with unit gain).
      assertVaried(java.util.Arrays.copyOf(values, EmbeddedConfigs.TEXT_DIM), 0.5, 2.0);
    }
  }

  @Test
  void transformerPredictsAFiniteFlowAtTheDefaultSizeForBothGuidanceBranches() {
    WanTransformer dit =
        load(
            "transformer",
            w ->
                WanTransformer.load(
                    WanTransformerConfig.fromJson(checkpoint.component("transformer").config()),
                    w));
    int[] latent = latentShape(2);
    Tensor latents = backend.upload(noise("latents", latent), DType.F32);
    Tensor timestep = backend.upload(Tensor.of(new float[] {999f, 999f}, 2), DType.F32);
    Tensor text =
        backend.upload(noise("text", 2, SEQUENCE_LENGTH, EmbeddedConfigs.TEXT_DIM), DType.F32);

    dit.forward(latents, timestep, text, TapSink.NONE); // warm-up: JIT and rotary tables
    long start = System.nanoTime();
    Tensor flow = dit.forward(latents, timestep, text, TapSink.NONE);
    float[] values = backend.download(flow).toFloatArray();
    report("DiT forward, batch 2 (CFG) at latent " + java.util.Arrays.toString(latent), start);

    assertArrayEquals(latent, flow.shape());
    assertVaried(values, 0.2, 5.0);
  }

  @Test
  void vaeDecodesTheDefaultLatentToVariedFrames() {
    WanVae vae =
        load(
            "vae",
            w -> WanVae.load(WanVaeConfig.fromJson(checkpoint.component("vae").config()), w));
    GenerationDefaults d = EmbeddedWan.DEFAULTS;
    Tensor latents = vae.denormalize(backend.upload(noise("latents", latentShape(1)), DType.F32));

    long start = System.nanoTime();
    Tensor video = vae.decode(latents);
    float[] values = backend.download(video).toFloatArray();
    report("VAE decode to " + d.frames() + " x " + d.height() + " x " + d.width(), start);

    assertArrayEquals(new int[] {1, 3, d.frames(), d.height(), d.width()}, video.shape());
    assertVaried(values, 0.1, 1.0);
  }

  /** The latent of a default-sized video, in the shipped VAE's compression and channels. */
  private static int[] latentShape(int batch) {
    GenerationDefaults d = EmbeddedWan.DEFAULTS;
    WanVaeConfig vae = WanVaeConfig.fromJson(checkpoint.component("vae").config());
    int t = vae.temporalCompression();
    int s = vae.spatialCompression();
    return new int[] {batch, vae.zDim(), (d.frames() - 1) / t + 1, d.height() / s, d.width() / s};
  }

  private static Tensor noise(String name, int... shape) {
    return new SeededValues(7).materialise(TensorSpec.normal(name, 1f, shape));
  }

  private static UMT5Config umt5Config() {
    DiffusersDirectory.Component c = checkpoint.component("text_encoder");
    return UMT5Config.fromJson(c.config(), c.configFile().toString());
  }

  /** Loads a component strictly: {@code Weights.finish()} inside the loader rejects extras. */
  private static <T> T load(String component, Function<Weights, T> loader) {
    try (TensorSource source = checkpoint.component(component).openWeights()) {
      return loader.apply(new Weights(source, backend, DType.F32));
    }
  }

  /**
   * All finite, with a standard deviation in {@code [minStd, maxStd]}: not constant, not blown up.
   */
  private static void assertVaried(float[] values, double minStd, double maxStd) {
    double sum = 0;
    double squares = 0;
    for (float v : values) {
      assertTrue(Float.isFinite(v), "non-finite output");
      sum += v;
      squares += (double) v * v;
    }
    double mean = sum / values.length;
    double std = Math.sqrt(Math.max(0, squares / values.length - mean * mean));
    assertTrue(
        std >= minStd && std <= maxStd, "std " + std + " outside [" + minStd + ", " + maxStd + "]");
  }

  private static void report(String what, long startNanos) {
    System.out.printf(
        "[embedded-timing] %s: %.0f ms%n", what, (System.nanoTime() - startNanos) / 1e6);
  }
}
