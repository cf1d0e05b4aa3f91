package dev.stepweave.training.parity;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.wan.TrainableLora;
import dev.stepweave.training.wan.TrainableTransformer;
import dev.stepweave.training.wan.TrainableTransformer.LossAndGradients;
import dev.stepweave.training.wan.TrainableVae;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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

  /**
   * Three full-batch AdamW steps of {@code adamw_3steps.safetensors} (settings from its {@code
   * optimizer} metadata) on {@code dit_train}'s inputs: each step's loss, and per parameter the
   * update (parameter after the steps minus the checkpoint's), in relative L2 everywhere and in max
   * abs where the reference's first-step gradient is comparable.
   */
  public void checkAdamW(SafetensorsFile rec, SafetensorsFile ditTrain, ParityReport report) {
    AdamW.Settings settings = optimizerSettings(rec);
    double lr = optimizerJson(rec).path("lr").asDouble(Double.NaN);
    Tensor losses = required(rec, "losses");
    int steps = losses.dim(0);
    try (TensorSource weights = transformerWeights()) {
      TrainableTransformer model = load(weights);
      Map<String, Tensor> parameters = model.parameters();
      Map<String, Tensor> initial = new LinkedHashMap<>();
      parameters.forEach((name, p) -> initial.put(name, Tensor.of(p.toFloatArray(), p.shape())));
      AdamW optimizer = new AdamW(settings);
      FlowMatching.Batch batch = batch(ditTrain);
      float[] ours = new float[steps];
      for (int i = 0; i < steps; i++) {
        LossAndGradients step = model.lossAndGradients(batch, parameters, AdapterRows.NONE);
        ours[i] = step.loss();
        optimizer.step(parameters, step.gradients(), lr);
      }
      report.add(Comparison.of("losses", Tensor.of(ours, steps), losses, TrainingTolerances.LOSS));
      for (String name : new TreeSet<>(parameters.keySet())) {
        Tensor expected = required(rec, PARAM + name);
        Tensor start = initial.get(name);
        Tensor update = difference(parameters.get(name), start);
        Tensor expectedUpdate = difference(expected, start);
        report.add(
            Comparison.of("update." + name, update, expectedUpdate, TrainingTolerances.UPDATE));
        float[] firstGrad = required(ditTrain, GRAD + name).toFloatArray();
        report.add(
            Comparison.of(
                "update." + name + "[|grad| > " + TrainingTolerances.COMPARABLE_GRADIENT + "]",
                comparable(update, firstGrad),
                comparable(expectedUpdate, firstGrad),
                TrainingTolerances.UPDATE_MAX_ABS));
      }
      for (String key : rec.keys()) {
        if (key.startsWith(PARAM) && !parameters.containsKey(key.substring(PARAM.length()))) {
          report.error("the recording updates '" + key + "', which the model does not have");
        }
      }
    }
  }

  private static final String PARAM = "param.";

  /** The adapter a LoRA recording names: {@code …loras/<file> at strength <s>}. */
  private static final Pattern ADAPTER =
      Pattern.compile("loras/(\\S+\\.safetensors) at strength ([0-9.eE+-]+)");

  /**
   * LoRA-only gradients of {@code lora_train.safetensors}: the adapter its {@code adapter} metadata
   * names, from the checkpoint's {@code loras/} folder, attached at its strength, the base weights
   * frozen; the loss and every factor's gradient on {@code dit_train}'s inputs.
   */
  public void checkLoraTrain(SafetensorsFile rec, SafetensorsFile ditTrain, ParityReport report) {
    String named = rec.metadata().get("adapter");
    Matcher m = named == null ? null : ADAPTER.matcher(named);
    if (m == null || !m.find()) {
      throw new IllegalArgumentException(
          "recording "
              + rec
              + ": 'adapter' metadata must name loras/<file>.safetensors at strength <s>, not "
              + named);
    }
    Path file = checkpoint.dir().resolve("loras").resolve(m.group(1));
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "recording " + rec + " names adapter " + file + ", which does not exist");
    }
    FlowMatching.Batch batch = batch(ditTrain);
    try (TensorSource weights = transformerWeights()) {
      TrainableTransformer model = load(weights);
      try (TrainableLora lora = TrainableLora.load(model, file, Float.parseFloat(m.group(2)))) {
        LossAndGradients result =
            model.lossAndGradients(batch, lora.parameters(), lora.rows(batch.x0().dim(0)));
        compare(
            report,
            "loss",
            Tensor.of(new float[] {result.loss()}, 1),
            rec,
            TrainingTolerances.LOSS);
        compareGradients(report, rec, result.gradients(), Set.of());
      }
    }
  }

  static AdamW.Settings optimizerSettings(SafetensorsFile rec) {
    JsonNode json = optimizerJson(rec);
    if (!"AdamW".equals(json.path("type").asText())) {
      throw new IllegalArgumentException(
          "recording " + rec + ": optimizer " + json.path("type") + " is not AdamW");
    }
    return new AdamW.Settings(
        json.path("betas").path(0).asDouble(),
        json.path("betas").path(1).asDouble(),
        json.path("eps").asDouble(),
        json.path("weight_decay").asDouble());
  }

  private static JsonNode optimizerJson(SafetensorsFile rec) {
    String text = rec.metadata().get("optimizer");
    if (text == null) {
      throw new IllegalArgumentException("recording " + rec + " has no 'optimizer' metadata");
    }
    try {
      return new ObjectMapper().readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "recording " + rec + ": 'optimizer' metadata is not JSON: " + e.getMessage());
    }
  }

  private static Tensor difference(Tensor a, Tensor b) {
    float[] x = a.toFloatArray();
    float[] y = b.toFloatArray();
    for (int i = 0; i < x.length; i++) {
      x[i] -= y[i];
    }
    return Tensor.of(x, a.shape());
  }

  /** The elements of {@code t} where the first-step gradient's magnitude is comparable. */
  private static Tensor comparable(Tensor t, float[] firstGrad) {
    float[] v = t.toFloatArray();
    int n = 0;
    for (float g : firstGrad) {
      n += Math.abs(g) > TrainingTolerances.COMPARABLE_GRADIENT ? 1 : 0;
    }
    float[] out = new float[n];
    for (int i = 0, j = 0; i < v.length; i++) {
      if (Math.abs(firstGrad[i]) > TrainingTolerances.COMPARABLE_GRADIENT) {
        out[j++] = v[i];
      }
    }
    return Tensor.of(out, n);
  }

  /**
   * The VAE reconstruction loss of {@code vae_train.safetensors} and the gradient of every VAE
   * parameter that receives one.
   */
  public void checkVaeTrain(SafetensorsFile rec, ParityReport report) {
    DiffusersDirectory.Component component = checkpoint.component("vae");
    try (TensorSource weights = component.openWeights()) {
      TrainableVae vae =
          TrainableVae.load(WanVaeConfig.fromJson(component.config()), weights, new CpuBackend());
      TrainableVae.Result result = vae.reconstructionStep(required(rec, "video"));
      compare(
          report,
          "reconstruction",
          result.reconstruction(),
          rec,
          TrainingTolerances.RECONSTRUCTION);
      compare(
          report, "loss", Tensor.of(new float[] {result.loss()}, 1), rec, TrainingTolerances.LOSS);
      compareGradients(report, rec, result.gradients(), Set.of());
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

  /** The batch a training recording ({@code dit_train}) was made on: x0, noise, σ, text states. */
  public static FlowMatching.Batch batch(SafetensorsFile rec) {
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
    return rec.load(name).toHost(DType.F32);
  }
}
