package dev.stepweave.models.clip;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;

/** The Wan2.1 I2V golden checkpoint's CLIP components and their recording. */
final class ClipGoldens {
  static final Path CHECKPOINT =
      Path.of(System.getProperty("stepweave.golden")).resolve("wan21-i2v-tiny");
  static final Path IMAGE_ENCODER = CHECKPOINT.resolve("image_encoder");
  static final Path PROCESSOR_CONFIG =
      CHECKPOINT.resolve("image_processor").resolve("preprocessor_config.json");
  static final Path RECORDING =
      Path.of(System.getProperty("stepweave.golden"))
          .resolve("wan21-i2v-tiny-expected")
          .resolve("clip.safetensors");

  private ClipGoldens() {}

  static ClipVisionConfig config() {
    return ClipVisionConfig.read(IMAGE_ENCODER.resolve("config.json"));
  }

  static TensorSource weights() {
    return SafetensorsFile.open(IMAGE_ENCODER.resolve("model.safetensors"));
  }

  /** The golden encoder on {@code backend}, its weights loaded from a file closed again. */
  static ClipVisionEncoder encoder(Backend backend) {
    try (TensorSource source = weights()) {
      return ClipVisionEncoder.load(config(), new Weights(source, backend, DType.F32));
    }
  }
}
