package dev.stepweave.models.wan.transformer;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;

/**
 * Paths and configs of the tiny golden Wan checkpoints and their DiT recordings: {@link #T2V} (Wan
 * 2.1 text-to-video, the default), {@link #I2V} (Wan2.1 image-to-video: image tokens) and {@link
 * #TI2V} (Wan2.2 TI2V: per-token timesteps).
 */
final class TinyWanCheckpoint {
  static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  static final String T2V = "wan21-tiny";
  static final String I2V = "wan21-i2v-tiny";
  static final String TI2V = "wan22-ti2v-tiny";

  private TinyWanCheckpoint() {}

  static DiffusersDirectory.Component transformer() {
    return transformer(T2V);
  }

  /** The transformer component of golden checkpoint {@code checkpoint} ({@link #I2V}, …). */
  static DiffusersDirectory.Component transformer(String checkpoint) {
    return DiffusersDirectory.open(GOLDEN.resolve(checkpoint)).component("transformer");
  }

  /** A mutable copy of the transformer's config.json, for tests that alter it. */
  static ObjectNode configJson() {
    return configJson(T2V);
  }

  static ObjectNode configJson(String checkpoint) {
    return transformer(checkpoint).config().deepCopy();
  }

  /** The golden transformer in F32 on {@code backend}; {@code weights} must outlive it. */
  static WanTransformer loadModel(TensorSource weights, Backend backend) {
    return loadModel(T2V, weights, backend);
  }

  static WanTransformer loadModel(String checkpoint, TensorSource weights, Backend backend) {
    WanTransformerConfig cfg = WanTransformerConfig.fromJson(transformer(checkpoint).config());
    return WanTransformer.load(cfg, new Weights(weights, backend, DType.F32));
  }

  static SafetensorsFile recording() {
    return recording(T2V);
  }

  /** The reference's DiT recording of {@code checkpoint} ({@code <checkpoint>-expected/dit}). */
  static SafetensorsFile recording(String checkpoint) {
    return SafetensorsFile.open(GOLDEN.resolve(checkpoint + "-expected/dit.safetensors"));
  }
}
