package dev.stepweave.models.wan.transformer;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;

/** Paths and config of the tiny golden Wan 2.1 checkpoint and its DiT recording. */
final class TinyWanCheckpoint {
  static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  static final Path PIPELINE_DIR = GOLDEN.resolve("wan21-tiny");
  static final Path RECORDING = GOLDEN.resolve("wan21-tiny-expected/dit.safetensors");

  private TinyWanCheckpoint() {}

  static DiffusersDirectory.Component transformer() {
    return DiffusersDirectory.open(PIPELINE_DIR).component("transformer");
  }

  /** A mutable copy of the transformer's config.json, for tests that alter it. */
  static ObjectNode configJson() {
    return transformer().config().deepCopy();
  }

  /** The golden transformer in F32 on {@code backend}; {@code weights} must outlive it. */
  static WanTransformer loadModel(TensorSource weights, Backend backend) {
    WanTransformerConfig cfg = WanTransformerConfig.fromJson(transformer().config());
    return WanTransformer.load(cfg, new Weights(weights, backend, DType.F32));
  }

  static SafetensorsFile recording() {
    return SafetensorsFile.open(RECORDING);
  }
}
