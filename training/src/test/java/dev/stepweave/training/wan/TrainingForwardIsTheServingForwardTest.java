package dev.stepweave.training.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.autograd.Tape;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * design_v3 §9.4: the trainer's forward is the serving forward. The DiT loaded for training gives
 * the serving model's output bit for bit, in evaluation mode and while recording a tape.
 */
class TrainingForwardIsTheServingForwardTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  @Test
  void evaluationAndRecordedForwardsAreBitIdenticalToServing() {
    DiffusersDirectory.Component component =
        DiffusersDirectory.open(GOLDEN.resolve("wan21-tiny")).component("transformer");
    WanTransformerConfig cfg = WanTransformerConfig.fromJson(component.config());
    try (TensorSource weights = component.openWeights();
        SafetensorsFile rec =
            SafetensorsFile.open(GOLDEN.resolve("wan21-tiny-expected/dit.safetensors"))) {
      Tensor hidden = rec.load("hidden_states").toHost(DType.F32);
      Tensor timestep = rec.load("timestep").toHost(DType.F32);
      Tensor text = rec.load("encoder_hidden_states").toHost(DType.F32);
      WanTransformer serving =
          WanTransformer.load(cfg, new Weights(weights, new CpuBackend(), DType.F32));
      float[] served = serving.forward(hidden, timestep, text, TapSink.NONE).toFloatArray();

      TrainableTransformer training = TrainableTransformer.load(cfg, weights, new CpuBackend());
      float[] evaluated =
          training.model().forward(hidden, timestep, text, TapSink.NONE).toFloatArray();
      assertArrayEquals(served, evaluated, 0f, "evaluation mode");

      Tape tape = new Tape();
      training.parameters().values().forEach(tape::track);
      RecordingBackend backend = (RecordingBackend) training.backend();
      float[] recorded =
          backend
              .recording(tape, () -> training.model().forward(hidden, timestep, text, TapSink.NONE))
              .toFloatArray();
      assertTrue(tape.size() > 50, "the forward was recorded (" + tape.size() + " operations)");
      assertArrayEquals(served, recorded, 0f, "recording a tape");
    }
  }
}
