package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.data.ClipDecoder;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.LearningRate;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableLora;
import dev.stepweave.training.wan.TrainableTransformer;
import dev.stepweave.training.wan.TrainableVae;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * One {@code stepweave train} run: the output folder checked (a fresh run needs it absent or empty;
 * {@code resume} continues the run it holds from its latest checkpoint, with the same config), the
 * data read, the component loaded for training on the CPU, then optimiser step after step — each
 * logged to {@code loss.jsonl}, a checkpoint every {@code checkpoint_every} steps and after the
 * last — and at the end the trained checkpoint or LoRA written ({@link TrainedOutputs}). On the CPU
 * a run resumed from step k ends bit for bit where the uninterrupted run ends.
 */
public final class TrainingRun {
  /** The config a run was started with, in its output folder. */
  public static final String RUN_FILE = "run.json";

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  /** What a run tells its caller as it goes. */
  public interface Listener {
    /** A phase begins (loading, encoding, writing). */
    void note(String message);

    /** An optimiser step is done. */
    void step(Optimiser.Step step, int totalSteps, double seconds);

    /** A checkpoint was written after {@code step} steps. */
    default void checkpointed(int step) {}
  }

  /**
   * What a run did.
   *
   * @param startStep the step it started from (0, or its checkpoint's when resumed)
   * @param stepsDone the steps done by the end, over the whole run
   * @param artifact the trained checkpoint or LoRA folder, or null when the run stopped early
   */
  public record Result(Path output, int startStep, int stepsDone, Path artifact) {}

  private final TrainConfig config;
  private final Listener listener;
  private final Backend compute;

  /** Where the trained component computes, once loaded: "the CPU" or the device backend's name. */
  private String computedOn = "the CPU";

  private TrainingRun(TrainConfig config, Listener listener, Backend compute) {
    this.config = config;
    this.listener = listener;
    this.compute = compute;
  }

  /** Runs {@code config} to its last step. */
  public static Result run(
      TrainConfig config, boolean resume, ClipDecoder decoder, Listener listener)
      throws IOException {
    return run(config, resume, decoder, listener, config.steps());
  }

  /**
   * Runs {@code config} until {@code stopAfter} steps are done in all (a test interrupts a run so),
   * then writes a checkpoint if it stopped early.
   *
   * @throws TrainConfigException when the output folder does not fit ({@code resume} without a run
   *     there, a run there without {@code resume}, another config)
   */
  public static Result run(
      TrainConfig config, boolean resume, ClipDecoder decoder, Listener listener, int stopAfter)
      throws IOException {
    return run(config, resume, decoder, listener, stopAfter, new CpuBackend());
  }

  /**
   * Like {@link #run(TrainConfig, boolean, ClipDecoder, Listener, int)}, with the trained
   * component's forward and backward on {@code compute}: on a device, flow matching (full or LoRA)
   * and the VAE's reconstruction train there, the F32 masters, AdamW's moments and the EMA beside
   * them on the device (the host sees the weights only at a checkpoint); distillation and RL runs
   * stay on the CPU, and the run says so.
   */
  public static Result run(
      TrainConfig config,
      boolean resume,
      ClipDecoder decoder,
      Listener listener,
      int stopAfter,
      Backend compute)
      throws IOException {
    return new TrainingRun(config, listener, compute)
        .execute(resume, decoder, Math.min(stopAfter, config.steps()));
  }

  /**
   * Whether the method trains on a device backend: flow matching (full or LoRA) and the VAE do;
   * distillation and RL runs (their rollouts through a CPU engine) stay on the CPU.
   */
  private boolean methodTrainsOnADevice() {
    return !(config.method() instanceof TrainConfig.Method.Distill
        || config.method() instanceof TrainConfig.Method.Nft);
  }

  /** The recording backend the trained component computes on: {@link #compute} where it can. */
  private RecordingBackend trainingBackend() {
    if (compute.device().kind() == Device.Kind.CPU) {
      return new RecordingBackend(compute);
    }
    if (!methodTrainsOnADevice()) {
      listener.note(
          config.method().name()
              + " trains on the CPU: flow matching (full or LoRA) and the VAE train on "
              + compute.device());
      return new RecordingBackend(new CpuBackend());
    }

    listener.note(
        "computing on "
            + compute.name()
            + " in "
            + config.precision().wireName()
            + " (the F32 weights, AdamW and the EMA there too)");
    computedOn = compute.name();
    return new RecordingBackend(
        compute, new CpuBackend(), RecordingBackend.ActivationCheckpointing.OFF);
  }

  /**
   * Refuses a config whose precision is not what this run would compute in: bf16 is a GPU's, for
   * flow matching and the VAE (distillation and RL train on the CPU, in f32).
   */
  private void checkPrecision() {
    boolean onCpu = compute.device().kind() == Device.Kind.CPU || !methodTrainsOnADevice();
    if (onCpu && config.precision() != Precision.F32) {
      throw new TrainConfigException(
          "precision: "
              + config.precision().wireName()
              + " computes on a GPU (--backend cuda), for flow matching and the VAE; this run"
              + " computes on the CPU, in f32");
    }
    Precision there = Precision.of(compute.activationDType());
    if (!onCpu && there != config.precision()) {
      throw new TrainConfigException(
          "precision: the config trains in "
              + config.precision().wireName()
              + " but "
              + compute.name()
              + " computes in "
              + there.wireName());
    }
  }

  private Result execute(boolean resume, ClipDecoder decoder, int stopAfter) throws IOException {
    checkPrecision();
    Path out = config.output();
    Optional<RunCheckpoint> from = prepareOutput(out, resume);
    Path base = config.base() != null ? config.base() : EmbeddedWan.ensure();
    Path runBase = config.init() == null ? base : initialisedBase(base, out);
    TrainingData data = TrainingDataLoader.load(config, runBase, decoder, compute, listener::note);
    listener.note(
        "loading the " + config.component().folder() + " of " + runBase + " for training");
    DiffusersDirectory checkpoint = DiffusersDirectory.open(runBase);
    DiffusersDirectory.Component component = checkpoint.component(config.component().folder());
    TrainableLora lora = null;
    TrainedComponent trained;
    try (TensorSource weights = component.openWeights()) {
      if (config.component() == TrainConfig.Component.TRANSFORMER) {
        TrainableTransformer model =
            TrainableTransformer.load(
                WanTransformerConfig.fromJson(component.config()), weights, trainingBackend());
        if (config.method() instanceof TrainConfig.Method.Lora m) {
          Path adapter = from.isPresent() ? from.get().weightsFile() : initialLora(model, m, out);
          lora = TrainableLora.load(model, adapter, 1f);
        }
        trained =
            switch (data) {
              case TrainingData.Segments segments -> new DistillationComponent(model, segments);
              case TrainingData.Rollouts rollouts ->
                  NftComponent.open(
                      runBase,
                      model,
                      rollouts.prompts(),
                      (TrainConfig.Method.Nft) config.method(),
                      config.seed());
              default ->
                  new FlowMatchingComponent(
                      model,
                      lora,
                      (TrainingData.Latents) data,
                      config.noiseLevels(),
                      config.captionDropout());
            };
      } else {
        TrainableVae vae =
            TrainableVae.load(
                WanVaeConfig.fromJson(component.config()), weights, trainingBackend());
        TrainingData.Clips clips = (TrainingData.Clips) data;
        trained =
            new ReconstructionComponent(vae, clips, ReconstructionComponent.reached(vae, clips));
      }
    }
    try (trained) {
      return train(trained, from, lora, runBase, data, stopAfter);
    }
  }

  private Result train(
      TrainedComponent trained,
      Optional<RunCheckpoint> from,
      TrainableLora lora,
      Path runBase,
      TrainingData data,
      int stopAfter)
      throws IOException {
    Path out = config.output();
    long parameters = trained.trainable().values().stream().mapToLong(Tensor::numel).sum();
    listener.note(
        String.format(
            java.util.Locale.ROOT,
            "training %,d parameters of the %s (%s) on %s, %d steps of batch %d",
            parameters,
            config.component().folder(),
            config.method().name(),
            data.describe(),
            config.steps(),
            config.batch()));
    Optimiser optimiser = new Optimiser(settings(), trained.trainable(), trained.backend());
    int start = 0;
    Path log = out.resolve(LossLog.FILE);
    if (from.isPresent()) {
      RunCheckpoint c = from.get();
      listener.note("resuming from " + c.dir() + " (step " + c.step() + ")");
      if (lora == null) {
        restore(trained.trainable(), c.weights(), optimiser.backend());
        trained.stepped();
      }
      optimiser.restore(c.optimiser());
      start = c.step();
    }
    LossLog.truncate(log, start);
    Path rewards = out.resolve(RewardLog.FILE);
    StepLines.truncate(rewards, start);
    if (start == 0) {
      heldOut(trained, 0, rewards);
    }
    DataOrder order = new DataOrder(config.seed(), data.size());
    int micro = config.batch() / config.microBatch();
    TrainableLora adapter = lora;
    for (int step = start; step < stopAfter; step++) {
      long began = System.nanoTime();
      StepDraws draws = new StepDraws(config.seed(), step);
      long position = (long) step * config.batch();
      trained.beforeStep(step);
      Optimiser.Step s =
          optimiser.step(
              trained.trainable(),
              micro,
              i -> {
                List<Integer> samples = new ArrayList<>();
                for (int r = 0; r < config.microBatch(); r++) {
                  samples.add(order.sampleAt(position + (long) i * config.microBatch() + r));
                }
                return trained.evaluate(samples, draws, 1.0 / micro);
              });
      trained.stepped();
      double seconds = (System.nanoTime() - began) / 1e9;
      LossLog.append(
          log,
          new LossLog.Row(
              step + 1, s.loss(), s.learningRate(), s.gradientNorm(), seconds, trained.reward()));
      listener.step(s, config.steps(), seconds);
      int done = step + 1;
      if (config.evaluation() != null
          && (done % config.evaluation().every() == 0 || done == config.steps())) {
        heldOut(trained, done, rewards);
      }
      if (done % config.checkpointEvery() == 0 || done == stopAfter) {
        Map<String, Tensor> now = optimiser.onHost(trained.trainable());
        RunCheckpoint.write(
            out,
            done,
            (long) done * config.batch(),
            config,
            optimiser.state(),
            file -> TrainedOutputs.writeTrainable(file, now, adapter, config));
        RunCheckpoint.prune(out, config.keepCheckpoints());
        listener.checkpointed(done);
      }
    }
    if (stopAfter < config.steps()) {
      return new Result(out, start, stopAfter, null);
    }
    listener.note("writing the trained " + (lora == null ? "checkpoint" : "LoRA"));
    Path artifact =
        new TrainedOutputs(config, runBase, data, optimiser, trained, lora, computedOn).write(out);
    if (lora != null) {
      lora.close();
    }
    return new Result(out, start, config.steps(), artifact);
  }

  /** An RL run's held-out reward after {@code step} steps, logged and told; nothing otherwise. */
  private void heldOut(TrainedComponent trained, int step, Path rewards) throws IOException {
    if (config.evaluation() != null && trained instanceof NftComponent nft) {
      double reward = nft.heldOutReward(config.evaluation());
      RewardLog.append(rewards, new RewardLog.Row(step, reward));
      listener.note(
          String.format(
              java.util.Locale.ROOT,
              "held-out reward after %d steps: %.4f (%d prompts x %d samples)",
              step,
              reward,
              config.evaluation().prompts().size(),
              config.evaluation().samplesPerPrompt()));
    }
  }

  private Optimiser.Settings settings() {
    LearningRate schedule =
        switch (config.schedule().kind()) {
          case CONSTANT -> new LearningRate.Constant(config.learningRate());
          case WARMUP ->
              new LearningRate.LinearWarmup(config.learningRate(), config.schedule().warmup());
          case COSINE ->
              new LearningRate.Cosine(
                  config.learningRate(), config.schedule().warmup(), config.steps());
        };
    TrainConfig.Adam a = config.adamw();
    return new Optimiser.Settings(
        schedule,
        new AdamW.Settings(a.beta1(), a.beta2(), a.eps(), a.weightDecay()),
        config.maxGradNorm(),
        config.emaDecay());
  }

  /**
   * Checks the output folder against the config and {@code resume}; a fresh run records its config
   * there.
   *
   * @return the checkpoint to resume from, if any
   */
  private Optional<RunCheckpoint> prepareOutput(Path out, boolean resume) throws IOException {
    Path runFile = out.resolve(RUN_FILE);
    if (Files.isRegularFile(runFile)) {
      if (!resume) {
        throw new TrainConfigException(
            "output "
                + out
                + " holds a run already; pass --resume to continue it, or choose another output");
      }
      JsonNode recorded = JSON.readTree(runFile.toFile());
      String difference = difference(recorded, config.canonical());
      if (difference != null) {
        throw new TrainConfigException(
            "output "
                + out
                + " holds a run of another config ("
                + difference
                + "); a resume needs the same config");
      }
      return RunCheckpoint.latest(out);
    }
    if (resume) {
      throw new TrainConfigException("output " + out + " holds no run to resume");
    }
    if (Files.exists(out)) {
      try (Stream<Path> entries = Files.list(out)) {
        if (entries.findAny().isPresent()) {
          throw new TrainConfigException("output " + out + " is not empty and holds no run");
        }
      }
    }
    Files.createDirectories(out);
    Files.writeString(
        runFile, JSON.writeValueAsString(config.canonical()) + "\n", StandardCharsets.UTF_8);
    return Optional.empty();
  }

  /** The first key whose value differs, or null. */
  private static String difference(JsonNode recorded, ObjectNode now) {
    TreeSet<String> keys = new TreeSet<>();
    recorded.fieldNames().forEachRemaining(keys::add);
    now.fieldNames().forEachRemaining(keys::add);
    for (String k : keys) {
      // Compared as JSON text: a number read back from the file may be of another node type.
      if (!String.valueOf(recorded.get(k)).equals(String.valueOf(now.get(k)))) {
        return "'" + k + "' was " + recorded.get(k) + ", now " + now.get(k);
      }
    }
    return null;
  }

  /**
   * {@code out/base}: the base checkpoint with the trained component's weights fresh from {@code
   * init} (written once; a resume finds it).
   */
  private Path initialisedBase(Path base, Path out) throws IOException {
    Path dir = out.resolve("base");
    if (Files.isDirectory(dir)) {
      return dir;
    }
    String folder = config.component().folder();
    DiffusersDirectory checkpoint = DiffusersDirectory.open(base);
    ObjectNode merged = checkpoint.component(folder).config().deepCopy();
    for (Iterator<Map.Entry<String, JsonNode>> it = config.init().config().fields();
        it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (!merged.has(e.getKey())) {
        throw new TrainConfigException(
            "init.config: '"
                + e.getKey()
                + "' is not a key of the base's "
                + folder
                + "/config.json");
      }
      merged.set(e.getKey(), e.getValue());
    }
    if (config.component() == TrainConfig.Component.VAE) {
      merged = LatentStatistics.sized(merged);
    }
    listener.note(
        "initialising a fresh " + folder + " (seed " + config.init().seed() + ") in " + dir);
    Map<String, Tensor> weights;
    try {
      weights = EmbeddedWan.initialWeights(folder, merged, config.init().seed());
    } catch (RuntimeException e) {
      throw new TrainConfigException("init.config: " + e.getMessage());
    }
    if (config.init().pastFramesZero()) {
      weights = PerFrameStart.of(merged, weights);
    }
    CheckpointCopy.write(base, dir, folder, merged, weights, true);
    return dir;
  }

  /** A fresh LoRA's initial file, {@code out/lora-init.safetensors}. */
  private Path initialLora(TrainableTransformer model, TrainConfig.Method.Lora m, Path out) {
    try {
      return LoraFiles.writeInitial(
          out.resolve("lora-init.safetensors"), model.model().adaptableLayers(), m, config.seed());
    } catch (IllegalArgumentException e) {
      throw new TrainConfigException(e.getMessage());
    }
  }

  /** Writes saved values into the trainable tensors, in place. */
  private static void restore(
      Map<String, Tensor> trainable, Map<String, float[]> saved, Backend backend) {
    if (!saved.keySet().equals(trainable.keySet())) {
      throw new IllegalStateException(
          "the checkpoint holds "
              + saved.keySet().size()
              + " tensors, not the run's "
              + trainable.size());
    }
    trainable.forEach(
        (name, t) -> {
          float[] v = saved.get(name);
          if (v.length != t.numel()) {
            throw new IllegalStateException("checkpoint tensor '" + name + "' has another size");
          }
          backend.copyInto(t, Tensor.of(v, t.shape()));
        });
  }
}
