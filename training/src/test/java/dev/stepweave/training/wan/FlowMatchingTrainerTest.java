package dev.stepweave.training.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.LearningRate;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.parity.TrainingParity;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A few optimiser steps on one fixed batch of the tiny DiT: the loss falls, and a LoRA run leaves
 * every base weight exactly as it was.
 */
class FlowMatchingTrainerTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  private static FlowMatching.Batch batch() {
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      return TrainingParity.batch(rec);
    }
  }

  private static Map<String, float[]> copy(Map<String, Tensor> tensors) {
    Map<String, float[]> out = new LinkedHashMap<>();
    tensors.forEach((name, t) -> out.put(name, t.toFloatArray()));
    return out;
  }

  @Test
  void aLoraRunLowersTheLossAndTouchesNoBaseWeight() {
    Path checkpoint = GOLDEN.resolve("wan21-lora-tiny");
    DiffusersDirectory.Component c = DiffusersDirectory.open(checkpoint).component("transformer");
    FlowMatching.Batch batch = batch();
    try (TensorSource weights = c.openWeights()) {
      TrainableTransformer model =
          TrainableTransformer.load(
              WanTransformerConfig.fromJson(c.config()), weights, new CpuBackend());
      Map<String, float[]> base = copy(model.parameters());
      try (TrainableLora lora =
          TrainableLora.load(
              model, checkpoint.resolve("loras/adapter_a_diffusers.safetensors"), 1f)) {
        Map<String, float[]> factors = copy(lora.parameters());
        FlowMatchingTrainer trainer =
            FlowMatchingTrainer.lora(
                model,
                lora,
                new Optimiser.Settings(
                    new LearningRate.Constant(1e-2),
                    AdamW.Settings.torchDefaults(),
                    1.0,
                    Double.NaN));
        double first = trainer.step(List.of(batch)).loss();
        double last = first;
        for (int i = 1; i < 8; i++) {
          last = trainer.step(List.of(batch)).loss();
        }
        assertTrue(last < 0.95 * first, "loss " + first + " -> " + last);
        lora.parameters()
            .forEach(
                (name, t) ->
                    assertFalse(
                        Arrays.equals(factors.get(name), t.toFloatArray()), name + " was trained"));
      }
      model
          .parameters()
          .forEach(
              (name, t) ->
                  assertArrayEquals(base.get(name), t.toFloatArray(), 0f, name + " frozen"));
    }
  }

  @Test
  void aFullFineTuneWithWarmupAccumulationAndEmaLowersTheLoss() {
    DiffusersDirectory.Component c =
        DiffusersDirectory.open(GOLDEN.resolve("wan21-tiny")).component("transformer");
    FlowMatching.Batch batch = batch();
    List<FlowMatching.Batch> halves = List.of(row(batch, 0), row(batch, 1));
    try (TensorSource weights = c.openWeights()) {
      TrainableTransformer model =
          TrainableTransformer.load(
              WanTransformerConfig.fromJson(c.config()), weights, new CpuBackend());
      Map<String, float[]> start = copy(model.parameters());
      FlowMatchingTrainer trainer =
          new FlowMatchingTrainer(
              model,
              model.parameters(),
              n -> AdapterRows.NONE,
              new Optimiser.Settings(
                  new LearningRate.Cosine(2e-3, 2, 8), AdamW.Settings.torchDefaults(), 1.0, 0.5));
      Optimiser.Step first = trainer.step(halves);
      assertEquals(0, first.learningRate(), "warm-up starts at 0");
      double last = first.loss();
      for (int i = 1; i < 6; i++) {
        last = trainer.step(halves).loss();
      }
      assertTrue(last < 0.95 * first.loss(), "loss " + first.loss() + " -> " + last);
      String name = "proj_out.weight";
      Tensor now = model.parameters().get(name);
      float[] averaged = trainer.optimiser().ema().orElseThrow().averaged(name, now).toFloatArray();
      assertFalse(Arrays.equals(averaged, now.toFloatArray()), "the EMA lags");
      assertFalse(Arrays.equals(averaged, start.get(name)), "the EMA moved");
    }
  }

  private static FlowMatching.Batch row(FlowMatching.Batch b, int row) {
    return new FlowMatching.Batch(
        slice(b.x0(), row), slice(b.noise(), row), slice(b.sigma(), row), slice(b.context(), row));
  }

  private static Tensor slice(Tensor t, int row) {
    Tensor r = t.slice(0, row, row + 1);
    return Tensor.of(r.toFloatArray(), r.shape());
  }
}
