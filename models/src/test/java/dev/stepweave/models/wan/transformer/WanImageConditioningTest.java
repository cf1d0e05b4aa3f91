package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The image path of the I2V transformer beyond what the golden recording reaches: with the golden's
 * 7 text tokens the reference's split attends every token through the text projections, so these
 * tests use 512 text tokens (the reference pipelines' length), where exactly the image tokens go
 * through {@code add_k_proj}/{@code add_v_proj}. Adapters reach the image layers, and the learned
 * position embedding is added to each sample's image tokens.
 */
class WanImageConditioningTest {
  private static final String ADD_K = "blocks.0.attn2.add_k_proj";
  private static final String IMAGE_MLP = "condition_embedder.image_embedder.ff.net.0.proj";
  private static final String POSITIONS = "condition_embedder.image_embedder.pos_embed";
  private static final float STRENGTH = 0.8f;

  private final Backend backend = new CpuBackend();

  @Test
  void everyImageLayerIsAdaptable() {
    try (TensorSource weights =
        TinyWanCheckpoint.transformer(TinyWanCheckpoint.I2V).openWeights()) {
      Map<String, LinearShape> layers =
          TinyWanCheckpoint.loadModel(TinyWanCheckpoint.I2V, weights, backend).adaptableLayers();
      assertEquals(new LinearShape(32, 32), layers.get(ADD_K));
      assertEquals(new LinearShape(32, 32), layers.get("blocks.1.attn2.add_v_proj"));
      assertEquals(new LinearShape(24, 24), layers.get(IMAGE_MLP));
      assertEquals(
          new LinearShape(24, 32), layers.get("condition_embedder.image_embedder.ff.net.2"));
    }
  }

  @Test
  void adaptersOnTheImageLayersEqualTheirMergedWeights() {
    Map<String, LayerUpdate> updates =
        Map.of(ADD_K, update(1, 32, 32), IMAGE_MLP, update(2, 24, 24));
    try (SafetensorsFile recording = TinyWanCheckpoint.recording(TinyWanCheckpoint.I2V);
        TensorSource weights = TinyWanCheckpoint.transformer(TinyWanCheckpoint.I2V).openWeights();
        TensorSource merged = new PatchedSource(weights, mergedWeights(weights, updates))) {
      Tensor text = TorchGenerator.seeded(3).randn(2, 512, 22);
      WanTransformer model = TinyWanCheckpoint.loadModel(TinyWanCheckpoint.I2V, weights, backend);
      Tensor plain = run(model, recording, text, AdapterRows.NONE);
      Tensor adapted = run(model, recording, text, rows(updates));
      Tensor expected =
          run(
              TinyWanCheckpoint.loadModel(TinyWanCheckpoint.I2V, merged, backend),
              recording,
              text,
              AdapterRows.NONE);

      assertTrue(maxAbs(adapted, expected) <= GoldenBounds.maxAbs("dit"), "adapted vs merged");
      assertTrue(maxAbs(adapted, plain) > 1e-3, "the adapters change the prediction");
    }
  }

  /**
   * diffusers' own forward with 512 text tokens (testdata/diffusers-i2v-text512, made by
   * scripts/device/i2v_text512.py): the split that sends the image tokens through {@code
   * add_k_proj}/{@code add_v_proj} gives the reference's output within the dit golden's bound.
   */
  @Test
  void theImageTokensFollowDiffusersWith512TextTokens() {
    Path file =
        Path.of(System.getProperty("stepweave.golden"))
            .getParent()
            .resolve("diffusers-i2v-text512/dit_text512.safetensors");
    try (SafetensorsFile recording = SafetensorsFile.open(file);
        TensorSource weights = TinyWanCheckpoint.transformer(TinyWanCheckpoint.I2V).openWeights()) {
      WanTransformer model = TinyWanCheckpoint.loadModel(TinyWanCheckpoint.I2V, weights, backend);
      Tensor text = recording.load("encoder_hidden_states");
      assertEquals(512, text.dim(1));
      Tensor out = run(model, recording, text, AdapterRows.NONE);
      Tensor expected = recording.load("out").toF32();
      assertArrayEquals(expected.shape(), out.shape());
      double error = maxAbs(out, expected);
      System.out.printf("I2V DiT, 512 text tokens, vs diffusers: max abs %.2e%n", error);
      assertTrue(error <= GoldenBounds.maxAbs("dit"), "max abs " + error);
      // The image projections matter here: an adapter on add_k_proj moves the output.
      Tensor adapted = run(model, recording, text, rows(Map.of(ADD_K, update(1, 32, 32))));
      assertTrue(maxAbs(adapted, out) > 1e-3, "add_k_proj is reached");
    }
  }

  @Test
  void withTheGoldensSevenTextTokensNoTokenReachesTheImageProjections() {
    // [17 image ‖ 7 text] is shorter than the reference's 512 text tokens: all 24 count as text.
    try (SafetensorsFile recording = TinyWanCheckpoint.recording(TinyWanCheckpoint.I2V);
        TensorSource weights = TinyWanCheckpoint.transformer(TinyWanCheckpoint.I2V).openWeights()) {
      WanTransformer model = TinyWanCheckpoint.loadModel(TinyWanCheckpoint.I2V, weights, backend);
      Tensor text = recording.load("encoder_hidden_states");
      assertArrayEquals(
          run(model, recording, text, AdapterRows.NONE).toFloatArray(),
          run(model, recording, text, rows(Map.of(ADD_K, update(1, 32, 32)))).toFloatArray());
    }
  }

  @Test
  void thePositionEmbeddingIsAddedToEachSamplesImageTokens() {
    ObjectNode json = TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V);
    json.put("pos_embed_seq_len", 34);
    WanTransformerConfig withPositions = WanTransformerConfig.fromJson(json);
    Tensor positions = TorchGenerator.seeded(4).randn(1, 34, 24);
    try (SafetensorsFile recording = TinyWanCheckpoint.recording(TinyWanCheckpoint.I2V);
        TensorSource weights = TinyWanCheckpoint.transformer(TinyWanCheckpoint.I2V).openWeights();
        TensorSource patched = new PatchedSource(weights, Map.of(POSITIONS, positions))) {
      WanTransformer model =
          WanTransformer.load(withPositions, new Weights(patched, backend, DType.F32));
      WanTransformer without = TinyWanCheckpoint.loadModel(TinyWanCheckpoint.I2V, weights, backend);
      Tensor latents = recording.load("hidden_states");
      Tensor timesteps = recording.load("timestep");
      Tensor text = TorchGenerator.seeded(5).randn(2, 512, 22);
      Tensor image = TorchGenerator.seeded(6).randn(2, 34, 24);

      float[] perSample =
          backend
              .download(model.forward(latents, timesteps, text, image, TapSink.NONE))
              .toFloatArray();
      // The reference's layout: each sample's two images as consecutive rows of 17 tokens.
      float[] imagePairs =
          backend
              .download(
                  model.forward(latents, timesteps, text, image.reshape(4, 17, 24), TapSink.NONE))
              .toFloatArray();
      float[] addedBefore =
          backend
              .download(
                  without.forward(
                      latents, timesteps, text, backend.add(image, positions), TapSink.NONE))
              .toFloatArray();
      assertArrayEquals(perSample, imagePairs);
      assertArrayEquals(addedBefore, perSample);
    }
  }

  private Tensor run(
      WanTransformer model, SafetensorsFile recording, Tensor text, AdapterRows adapters) {
    return backend.download(
        model.forward(
            recording.load("hidden_states"),
            recording.load("timestep"),
            text,
            recording.load("encoder_hidden_states_image"),
            TapSink.NONE,
            BlockHooks.NONE,
            adapters));
  }

  /** A rank-2 update with factors of scale 0.3. */
  private static LayerUpdate update(long seed, int in, int out) {
    TorchGenerator g = TorchGenerator.seeded(seed);
    return new LayerUpdate(scaled(g.randn(2, in)), scaled(g.randn(out, 2)), 1f, null);
  }

  private static Tensor scaled(Tensor t) {
    float[] v = t.toFloatArray();
    for (int i = 0; i < v.length; i++) {
      v[i] *= 0.3f;
    }
    return Tensor.of(v, t.shape());
  }

  /** Both batch rows with one adapter of {@code updates} at {@link #STRENGTH}. */
  private static AdapterRows rows(Map<String, LayerUpdate> updates) {
    LayerAdapter adapter =
        new LayerAdapter() {
          @Override
          public Map<String, LayerUpdate> layers() {
            return updates;
          }

          @Override
          public String identity() {
            return "test";
          }
        };
    return AdapterRows.of(
        Collections.nCopies(2, List.of(new AdapterRows.Applied(adapter, STRENGTH))));
  }

  /** {@code W + strength · up · down} of every updated layer, by its weight's name. */
  private static Map<String, Tensor> mergedWeights(
      TensorSource weights, Map<String, LayerUpdate> updates) {
    Map<String, Tensor> out = new java.util.HashMap<>();
    updates.forEach(
        (layer, u) -> {
          Tensor w = weights.loadF32(layer + ".weight");
          int rows = w.dim(0);
          int cols = w.dim(1);
          int rank = u.down().dim(0);
          float[] merged = w.toFloatArray();
          float[] down = u.down().toFloatArray();
          float[] up = u.up().toFloatArray();
          for (int o = 0; o < rows; o++) {
            for (int i = 0; i < cols; i++) {
              double delta = 0;
              for (int r = 0; r < rank; r++) {
                delta += (double) up[o * rank + r] * down[r * cols + i];
              }
              merged[o * cols + i] += (float) (STRENGTH * delta);
            }
          }
          out.put(layer + ".weight", Tensor.of(merged, rows, cols));
        });
    return out;
  }

  private static double maxAbs(Tensor a, Tensor b) {
    float[] x = a.toFloatArray();
    float[] y = b.toFloatArray();
    double max = 0;
    for (int i = 0; i < x.length; i++) {
      max = Math.max(max, Math.abs(x[i] - y[i]));
    }
    return max;
  }
}
