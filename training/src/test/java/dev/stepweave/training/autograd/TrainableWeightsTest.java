package dev.stepweave.training.autograd;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.InMemoryTensors;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What a step tracks of a loaded model: its trainable tensors, and the load's derivations (here two
 * parameters stacked into one tensor, as the DiT's q/k/v) only when a parameter trains — an
 * adapter's factors alone leave the base and what it derived frozen.
 */
class TrainableWeightsTest {
  @Test
  void theLoadsDerivationsAreTrackedOnlyWhenAParameterTrains() {
    TrainableWeights<Tensor> weights =
        TrainableWeights.load(
            new InMemoryTensors(
                Map.of(
                    "a", Tensor.of(new float[] {1, 2}, 2), "b", Tensor.of(new float[] {3, 4}, 2)),
                "two parameters"),
            new RecordingBackend(new CpuBackend()),
            w -> w.takeStacked(List.of("a", "b"), 2));
    Tensor factor = Tensor.of(new float[] {5}, 1);
    Tape adapterOnly = new Tape();
    weights.track(adapterOnly, Map.of("lora_A", factor));
    assertTrue(adapterOnly.tracks(factor));
    assertFalse(
        weights.tracksDerivations(adapterOnly), "an adapter alone must not track the stack");
    Tape fineTune = new Tape();
    weights.track(fineTune, Map.of("a", weights.parameters().get("a")));
    assertTrue(weights.tracksDerivations(fineTune), "a trained parameter's stack is tracked");
  }
}
