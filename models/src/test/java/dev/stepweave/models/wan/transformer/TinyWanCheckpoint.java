package dev.stepweave.models.wan.transformer;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
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

  static SafetensorsFile recording() {
    return SafetensorsFile.open(RECORDING);
  }
}
