package dev.stepweave.training.parity;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.wan.TrainableTransformer;
import dev.stepweave.training.wan.TrainableTransformer.LossAndGradients;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Checks the training plane against the reference recordings of {@code wan21-train-expected}: each
 * recording file is recomputed from its own inputs on the checkpoint's weights and every recorded
 * output compared, in the order the run produces them.
 */
public final class TrainingParity {
  private static final String GRAD = "grad.";

  private final DiffusersDirectory checkpoint;

  public TrainingParity(Path checkpoint) {
    this.checkpoint = DiffusersDirectory.open(checkpoint);
  }

  /** The flow-matching loss, prediction and every gradient of {@code dit_train.safetensors}. */
  public void checkDitTrain(SafetensorsFile rec, ParityReport report) {
    try (TensorSource weights = transformerWeights()) {
      TrainableTransformer model = load(weights);
      LossAndGradients result =
          model.lossAndGradients(batch(rec), model.parameters(), AdapterRows.NONE);
      compare(report, "x_t", result.xt(), rec, TrainingTolerances.OBJECTIVE);
      compare(report, "pred", result.prediction(), rec, TrainingTolerances.PREDICTION);
      compare(
          report, "loss", Tensor.of(new float[] {result.loss()}, 1), rec, TrainingTolerances.LOSS);
      compare(
          report, "grad.hidden_states", result.inputGradient(), rec, TrainingTolerances.GRADIENT);
      compareGradients(report, rec, result.gradients(), Set.of("grad.hidden_states"));
    }
  }

  TrainableTransformer load(TensorSource weights) {
    DiffusersDirectory.Component transformer = checkpoint.component("transformer");
    return TrainableTransformer.load(
        WanTransformerConfig.fromJson(transformer.config()), weights, new CpuBackend());
  }

  TensorSource transformerWeights() {
    return checkpoint.component("transformer").openWeights();
  }

  static FlowMatching.Batch batch(SafetensorsFile rec) {
    return new FlowMatching.Batch(
        required(rec, "x0"),
        required(rec, "noise"),
        required(rec, "sigma"),
        required(rec, "encoder_hidden_states"));
  }

  /**
   * Every {@code grad.<name>} of the recording against {@code gradients}: a recorded gradient of a
   * tensor that was not differentiated, or a differentiated tensor the recording lacks, is an
   * error.
   */
  static void compareGradients(
      ParityReport report, SafetensorsFile rec, Map<String, Tensor> gradients, Set<String> other) {
    Set<String> recorded = new TreeSet<>();
    for (String key : rec.keys()) {
      if (key.startsWith(GRAD) && !other.contains(key)) {
        recorded.add(key.substring(GRAD.length()));
      }
    }
    for (String name : new TreeSet<>(gradients.keySet())) {
      if (!recorded.contains(name)) {
        report.error("the recording has no gradient of '" + name + "'");
        continue;
      }
      compare(report, GRAD + name, gradients.get(name), rec, TrainingTolerances.GRADIENT);
    }
    for (String name : recorded) {
      if (!gradients.containsKey(name)) {
        report.error("the recording has a gradient of '" + name + "', which nothing computed");
      }
    }
  }

  static void compare(
      ParityReport report, String name, Tensor actual, SafetensorsFile rec, Tolerance tolerance) {
    report.add(Comparison.of(name, actual, required(rec, name), tolerance));
  }

  static Tensor required(SafetensorsFile rec, String name) {
    if (!rec.keys().contains(name)) {
      throw new IllegalArgumentException("recording " + rec + " has no tensor '" + name + "'");
    }
    return rec.load(name).toHost(dev.stepweave.tensor.DType.F32);
  }
}
