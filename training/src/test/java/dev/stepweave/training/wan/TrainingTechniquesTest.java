package dev.stepweave.training.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.autograd.RecordingBackend.ActivationCheckpointing;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.GradientAccumulator;
import dev.stepweave.training.wan.TrainableTransformer.LossAndGradients;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Activation checkpointing and gradient accumulation change how a step's gradient is computed,
 * never what it is: both against the plain full-batch step on the tiny DiT.
 */
class TrainingTechniquesTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  // Float summation order differs (a block's gradients are added in another order), nothing else.
  private static final Tolerance SAME_GRADIENT = new Tolerance.RelativeL2(1e-5);

  private static TensorSource weights;
  private static WanTransformerConfig cfg;
  private static FlowMatching.Batch batch;

  @BeforeAll
  static void open() {
    DiffusersDirectory.Component c =
        DiffusersDirectory.open(GOLDEN.resolve("wan21-tiny")).component("transformer");
    cfg = WanTransformerConfig.fromJson(c.config());
    weights = c.openWeights();
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      batch =
          new FlowMatching.Batch(
              load(rec, "x0"),
              load(rec, "noise"),
              load(rec, "sigma"),
              load(rec, "encoder_hidden_states"));
    }
  }

  @AfterAll
  static void close() {
    weights.close();
  }

  private static Tensor load(SafetensorsFile rec, String name) {
    return rec.load(name).toHost(DType.F32);
  }

  private static LossAndGradients step(ActivationCheckpointing mode, FlowMatching.Batch b) {
    TrainableTransformer model = TrainableTransformer.load(cfg, weights, new CpuBackend(), mode);
    return model.lossAndGradients(b, model.parameters(), AdapterRows.NONE);
  }

  @Test
  void checkpointedBlocksGiveTheSameLossAndGradientsWithFewerKeptOperations() {
    LossAndGradients plain = step(ActivationCheckpointing.OFF, batch);
    LossAndGradients checkpointed = step(ActivationCheckpointing.PER_CHAIN_STEP, batch);
    assertEquals(plain.loss(), checkpointed.loss(), 0f, "the forward is the same computation");
    assertSame(plain.gradients(), checkpointed.gradients());
    assertSame(Map.of("x_t", plain.inputGradient()), Map.of("x_t", checkpointed.inputGradient()));
    assertTrue(
        checkpointed.operations() < plain.operations() / 2,
        "a block is one kept operation: "
            + checkpointed.operations()
            + " vs "
            + plain.operations());
  }

  @Test
  void accumulatingTwoMicroBatchesGivesTheFullBatchsGradient() {
    LossAndGradients full = step(ActivationCheckpointing.OFF, batch);
    GradientAccumulator accumulator = new GradientAccumulator(new CpuBackend(1));
    for (int row = 0; row < 2; row++) {
      FlowMatching.Batch micro =
          new FlowMatching.Batch(
              row(batch.x0(), row),
              row(batch.noise(), row),
              row(batch.sigma(), row),
              row(batch.context(), row));
      accumulator.add(step(ActivationCheckpointing.OFF, micro).gradients(), 0.5);
    }
    assertSame(full.gradients(), accumulator.total());
  }

  private static Tensor row(Tensor t, int row) {
    Tensor r = t.slice(0, row, row + 1);
    return Tensor.of(r.toFloatArray(), r.shape());
  }

  private static void assertSame(Map<String, Tensor> expected, Map<String, Tensor> actual) {
    assertEquals(expected.keySet(), actual.keySet());
    expected.forEach(
        (name, e) -> {
          Comparison c = Comparison.of(name, actual.get(name), e, SAME_GRADIENT);
          assertTrue(c.passed(), c.line());
        });
  }
}
