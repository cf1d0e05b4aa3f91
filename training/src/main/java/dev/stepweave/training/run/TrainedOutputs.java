package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.cache.ContentHash;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.Folders;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.distill.DistilledCard;
import dev.stepweave.training.distill.FewStepDistillation;
import dev.stepweave.training.optim.Ema;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableLora;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a finished run leaves: a full fine-tune as {@code model/}, a diffusers checkpoint (the base
 * with the trained component's weights replaced, the EMA's when the run keeps one) that the
 * ordinary loader reads, with a {@code card.json} whose recipe the run fills in; a LoRA as {@code
 * lora/}: {@code adapter_diffusers.safetensors} and {@code adapter_wan.safetensors} (the two
 * layouts the serving adapter loader reads) and {@code recipe.json}, the same recipe.
 */
final class TrainedOutputs {
  /**
   * The recipe an adapter file carries: a LoRA trained by flow matching assumes no run settings.
   */
  static final String ADAPTER_RECIPE = "{\"method\":\"lora\"}";

  static final String MODEL = "model";
  static final String LORA = "lora";
  static final String LORA_DIFFUSERS = "adapter_diffusers.safetensors";
  static final String LORA_WAN = "adapter_wan.safetensors";
  static final String RECIPE = "recipe.json";

  private static final ObjectMapper JSON =
      new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

  private final TrainConfig config;
  private final Path runBase;
  private final TrainingData data;
  private final Optimiser optimiser;
  private final TrainedComponent trained;
  private final TrainableLora lora;

  /** Where the forward and backward ran, for the provenance: "the CPU" or a device backend. */
  private final String computedOn;

  TrainedOutputs(
      TrainConfig config,
      Path runBase,
      TrainingData data,
      Optimiser optimiser,
      TrainedComponent trained,
      TrainableLora lora,
      String computedOn) {
    this.config = config;
    this.computedOn = computedOn;
    this.runBase = runBase;
    this.data = data;
    this.optimiser = optimiser;
    this.trained = trained;
    this.lora = lora;
  }

  /** A checkpoint's trainable tensors: a LoRA as a diffusers-format adapter file. */
  static void writeTrainable(
      Path file, Map<String, Tensor> tensors, TrainableLora lora, TrainConfig config) {
    if (lora != null && config.method() instanceof TrainConfig.Method.Lora m) {
      LoraFiles.writeDiffusers(file, tensors, m.rank(), m.alpha(), ADAPTER_RECIPE);
    } else {
      Safetensors.write(file, tensors, Map.of("format", "pt"));
    }
  }

  /** Writes the run's artifact into {@code out}, replacing an earlier one; returns its folder. */
  Path write(Path out) throws IOException {
    if (config.method() instanceof TrainConfig.Method.Distill d) {
      Path dir = out.resolve(MODEL);
      Folders.deleteTree(dir);
      return DistilledCard.write(
          runBase,
          dir,
          config.modelId(),
          finalValues(),
          d.studentSteps(),
          FewStepDistillation.provenance(
                  d.teacherSteps(), d.teacherGuidance(), config.steps(), config.batch())
              + String.format(
                  Locale.ROOT,
                  "; learning rate %s, seed %d, config sha256 %s",
                  config.learningRate(),
                  config.seed(),
                  ContentHash.ofBytes(
                      config.canonical().toString().getBytes(StandardCharsets.UTF_8))),
          new RecipeSpec.DataContract(data.id(), data.sha256()));
    }
    DiffusersDirectory base = DiffusersDirectory.open(runBase);
    ModelCard baseCard = WanCards.cardFor(base);
    String folder = config.component().folder();
    RecipeSpec recipe =
        new RecipeSpec(
            config.method().name(),
            List.of(baseCard.modelId()),
            provenance(),
            config.component() == TrainConfig.Component.TRANSFORMER ? WanCards.DENOISE : null,
            null,
            null,
            null,
            ConsistencyRung.C3,
            CheckpointCopy.weightsHash(base.component(folder).dir()),
            new RecipeSpec.DataContract(data.id(), data.sha256()),
            null);
    Map<String, Tensor> finals = finalValues();
    if (lora != null) {
      Path dir = out.resolve(LORA);
      Folders.deleteTree(dir);
      Files.createDirectories(dir);
      TrainConfig.Method.Lora m = (TrainConfig.Method.Lora) config.method();
      LoraFiles.writeDiffusers(
          dir.resolve(LORA_DIFFUSERS), finals, m.rank(), m.alpha(), ADAPTER_RECIPE);
      LoraFiles.writeWan(dir.resolve(LORA_WAN), finals, m.alpha(), ADAPTER_RECIPE);
      Files.writeString(
          dir.resolve(RECIPE), JSON.writeValueAsString(recipe) + "\n", StandardCharsets.UTF_8);
      return dir;
    }
    Path dir = out.resolve(MODEL);
    Folders.deleteTree(dir);
    Map<String, Tensor> weights = new LinkedHashMap<>();
    try (TensorSource source = base.component(folder).openWeights()) {
      // Every stored tensor: the trained ones at their final values, any other as the base has it.
      for (String key : new java.util.TreeSet<>(source.keys())) {
        weights.put(key, finals.containsKey(key) ? finals.get(key) : source.loadF32(key));
      }
    }
    ObjectNode componentConfig = (ObjectNode) base.component(folder).config();
    if (config.measureLatentStatistics()) {
      componentConfig =
          LatentStatistics.measured(componentConfig, weights, ((TrainingData.Clips) data).clips());
    }
    CheckpointCopy.write(runBase, dir, folder, componentConfig, weights, false);
    ModelCard card =
        new ModelCard(
            config.modelId(),
            baseCard.family(),
            baseCard.components(),
            baseCard.loops(),
            baseCard.capabilities(),
            recipe,
            baseCard.parity(),
            baseCard.caches(),
            baseCard.parallelism(),
            baseCard.precision(),
            baseCard.checkpoint(),
            defaults(baseCard.defaults()));
    CardJson.write(card.validate(dir.toString()), dir.resolve(CardJson.FILE_NAME));
    return dir;
  }

  /** The trained tensors as shipped: the EMA's averages when the run keeps one. */
  private Map<String, Tensor> finalValues() {
    Map<String, Tensor> now = optimiser.onHost(trained.trainable());
    Ema ema = optimiser.ema().orElse(null);
    Map<String, Tensor> out = new LinkedHashMap<>();
    now.forEach((name, t) -> out.put(name, ema == null ? t : ema.averaged(name, t)));
    return out;
  }

  /**
   * The trained model's generation defaults: the base's, but an RL-trained policy's steps and
   * guidance are those it was trained to sample with (CFG-free).
   */
  private GenerationDefaults defaults(GenerationDefaults base) {
    return config.method() instanceof TrainConfig.Method.Nft n
        ? new GenerationDefaults(
            base.width(), base.height(), base.frames(), base.fps(), n.samplingSteps(), 1.0)
        : base;
  }

  private String provenance() throws IOException {
    String objective =
        switch (config.method()) {
          case TrainConfig.Method.Nft n ->
              String.format(
                  Locale.ROOT,
                  "DiffusionNFT (beta %s, groups of %d, CFG-free %s %d steps; reward %s)",
                  n.beta(),
                  config.batch(),
                  n.sampler(),
                  n.samplingSteps(),
                  n.reward().key());
          default ->
              config.component() == TrainConfig.Component.TRANSFORMER
                  ? "flow matching"
                  : "reconstruction";
        };
    String init =
        config.init() == null
            ? ""
            : String.format(
                Locale.ROOT, ", from fresh weights (init seed %d)", config.init().seed());
    return String.format(
        Locale.ROOT,
        "stepweave train: %s %s of the %s by %s on %s%s; %d steps, batch %d, learning rate %s (%s),"
            + " seed %d, %s on %s; config sha256 %s",
        config.method().name(),
        config.method() instanceof TrainConfig.Method.Lora m ? "rank " + m.rank() : "fine-tune",
        config.component().folder(),
        objective,
        data.id(),
        init,
        config.steps(),
        config.batch(),
        config.learningRate(),
        config.schedule().kind().name().toLowerCase(Locale.ROOT),
        config.seed(),
        config.precision() == Precision.F32 ? "f32" : "bf16 compute over f32 weights",
        computedOn,
        ContentHash.ofBytes(config.canonical().toString().getBytes(StandardCharsets.UTF_8)));
  }
}
