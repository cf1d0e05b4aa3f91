package dev.stepweave.bench.gpu;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.autograd.RecordingBackend.ActivationCheckpointing;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.LearningRate;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.run.LoraFiles;
import dev.stepweave.training.run.TrainConfig;
import dev.stepweave.training.wan.FlowMatchingTrainer;
import dev.stepweave.training.wan.TrainableLora;
import dev.stepweave.training.wan.TrainableTransformer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Where the training plane stands on the GPU (issue 16's item 7, not its target yet): one
 * flow-matching forward and backward of a random-weight DiT of {@link Bench#config} {@code size}
 * (default {@code 1.3b}) at latent {@code [1, 16, F, H, W]} (default 9×32×32: 2 304 tokens, the
 * issue's first shape), text 512×4096, recorded over the CUDA backend in {@code precision} (F32 or
 * BF16) with F32 parameters. It times the forward and the backward (every rule the DiT needs runs
 * on the device, every trainable tensor's gradient left there), then a whole step as {@code
 * stepweave train --backend cuda} takes it: that, the gradient clipped by its global norm and AdamW
 * over the F32 trainable tensors in place, all on the device. CUDA-event medians of {@code
 * iterations} after a warm-up.
 *
 * <p>What trains: every parameter (a full fine-tune), or with {@code loraR} a fresh LoRA of rank R
 * as {@code stepweave train}'s {@code lora} method starts one with its defaults ({@link
 * LoraFiles#writeInitial}: alpha R, every attention projection of both attentions — {@code to_q},
 * {@code to_k}, {@code to_v}, {@code to_out.0}), stepped as that run steps it ({@link
 * FlowMatchingTrainer#lora}): the base weights frozen and not differentiated, the backward
 * differentiating the adapter's factors alone, clipping and AdamW over their F32 masters, the
 * factors updated from them after each step.
 *
 * <p>Arguments: {@code [size] [precision] [[B,]F,H,W or [Bx]FxHxW] [iterations] [checkpointing:
 * off|per-block] [loraR] [profile] [graph]} (the last three in any order, e.g. {@code lora16});
 * {@code profile} prints one step op by op instead of the timings; {@code graph} also times the
 * forward and backward recorded as one CUDA graph ({@link #graphed}). Size {@code embedded-gpu}
 * ({@link Bench#config}) runs with text of {@link EmbeddedWan#MAX_SEQUENCE_LENGTH} tokens, e.g. at
 * {@code 256x9x16x16}: a latent of batch B (default 1), every row at noise level 0.5.
 */
public final class TrainStepBench {
  /**
   * The optimiser as `stepweave train` takes it: clipping at norm 1, AdamW (torch's defaults), no
   * EMA.
   */
  private static final Optimiser.Settings SETTINGS =
      new Optimiser.Settings(
          new LearningRate.Constant(1e-5), AdamW.Settings.torchDefaults(), 1.0, Double.NaN);

  private TrainStepBench() {}

  public static void main(String[] args) {
    String size = args.length > 0 ? args[0] : "1.3b";
    Precision precision = Precision.valueOf(args.length > 1 ? args[1].toUpperCase() : "F32");
    // F,H,W or FxHxW (run.sh's MAINS separates a main's arguments with commas).
    String[] latent = (args.length > 2 ? args[2] : "9,32,32").split("[,x]");
    String[] fhw = Arrays.copyOfRange(latent, latent.length - 3, latent.length);
    int rows = latent.length > 3 ? Integer.parseInt(latent[0]) : 1;
    int iterations = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    ActivationCheckpointing checkpointing =
        args.length > 4 && args[4].equals("per-block")
            ? ActivationCheckpointing.PER_CHAIN_STEP
            : ActivationCheckpointing.OFF;
    boolean profiled = false;
    boolean graphed = false;
    int loraRank = 0; // a full fine-tune
    for (int i = 5; i < args.length; i++) {
      if (args[i].equals("profile")) {
        profiled = true;
      } else if (args[i].equals("graph")) {
        graphed = true;
      } else if (args[i].matches("lora[1-9][0-9]*")) {
        loraRank = Integer.parseInt(args[i].substring("lora".length()));
      } else {
        throw new IllegalArgumentException(
            "argument "
                + (i + 1)
                + ": 'profile', 'graph' or 'loraR' (e.g. lora16), not '"
                + args[i]
                + "'");
      }
    }
    CudaBackend gpu = Bench.openOrExit(precision);
    OpProfile profile = profiled ? OpProfile.over(gpu) : null;
    WanTransformerConfig cfg = Bench.config(size);
    int textLength = size.equals("embedded-gpu") ? EmbeddedWan.MAX_SEQUENCE_LENGTH : 512;
    long t0 = System.nanoTime();
    TrainableTransformer model =
        TrainableTransformer.load(
            cfg,
            new RandomWeights(WanDitShapes.of(cfg), DType.F32, 0.02f),
            new RecordingBackend(
                profiled ? profile.backend() : gpu, new CpuBackend(), checkpointing));
    gpu.synchronize();
    Map<String, Tensor> parameters = model.parameters();
    long count = parameters.values().stream().mapToLong(Tensor::numel).sum();
    System.out.printf(
        "  loaded %s (%,d parameters, F32) in %.1f s%n",
        size, count, (System.nanoTime() - t0) / 1e9);
    TrainableLora lora = loraRank > 0 ? freshLora(model, loraRank) : null;
    // " LoRA rank R (N trainable parameters)" in the rows, nothing for a full fine-tune.
    String method = "";
    if (lora != null) {
      long trainable = lora.parameters().values().stream().mapToLong(Tensor::numel).sum();
      method = String.format(" LoRA rank %d (%,d trainable parameters)", loraRank, trainable);
      System.out.printf(
          "  LoRA rank %d, alpha %d, on %s of every block's attentions: %d factors, %,d F32"
              + " parameters%n",
          loraRank,
          loraRank,
          String.join(", ", LoraFiles.DEFAULT_TARGETS),
          lora.parameters().size(),
          trainable);
    }
    int f = Integer.parseInt(fhw[0]), h = Integer.parseInt(fhw[1]), w = Integer.parseInt(fhw[2]);
    FlowMatching.Batch batch =
        new FlowMatching.Batch(
            RandomWeights.uniform(1, 1f, rows, cfg.inChannels(), f, h, w),
            RandomWeights.uniform(2, 1f, rows, cfg.inChannels(), f, h, w),
            Tensor.of(sigmas(rows), rows),
            RandomWeights.uniform(3, 1f, rows, textLength, cfg.textDim()));
    if (profiled) {
      profileOneStep(profile, trainer(model, lora), batch, size + " " + precision + method);
      return;
    }
    Map<String, Tensor> differentiated = lora == null ? parameters : lora.factors();
    AdapterRows adapters = lora == null ? AdapterRows.NONE : lora.rows(rows);
    gpu.resetPeaks();
    float[] loss = new float[1];
    // Each evaluation a step of the device's memory, as the trainer's step is: what it allocated
    // dies with it, so the peak is one evaluation's and no run waits on the garbage collector.
    Backend.StepMemory memory = gpu.stepMemory();
    float ms =
        Bench.median(
            gpu,
            iterations,
            () ->
                memory.step(
                    () -> loss[0] = model.lossAndGradients(batch, differentiated, adapters).loss(),
                    List::of));
    System.out.printf(
        "ROW training forward+backward %s %s%s latent [%d,%d,%d,%d,%d] (%d tokens a row),"
            + " checkpointing %s | %.1f ms (median of %d), loss %.4f | peak live %.1f GB%n",
        size,
        precision,
        method,
        rows,
        cfg.inChannels(),
        f,
        h,
        w,
        f * h * w / cfg.patchSize().volume(),
        checkpointing,
        ms,
        iterations,
        loss[0],
        gpu.peakLiveBytes() / 1e9);
    if (graphed) {
      graphed(gpu, precision, model, batch, differentiated, adapters);
    }
    // What `stepweave train --backend cuda` runs per step: the same, then the optimiser (the global
    // norm clipping, AdamW over the trainable tensors in place; a LoRA's factors from their
    // masters) on the device.
    FlowMatchingTrainer trainer = trainer(model, lora);
    gpu.resetPeaks();
    float stepMs = Bench.median(gpu, iterations, () -> trainer.step(List.of(batch)));
    System.out.printf(
        "ROW training step %s %s%s (forward, backward, clipping, AdamW; all on the device),"
            + " checkpointing %s | %.1f ms (median of %d) | peak live %.1f GB%n",
        size, precision, method, checkpointing, stepMs, iterations, gpu.peakLiveBytes() / 1e9);
  }

  /**
   * The forward and backward recorded as one CUDA graph ({@link CudaBackend#replayable}, the
   * batch's tensors as its static inputs, the loss its output) and replayed: against the eager
   * figure, how much of the step is the host issuing its operations rather than the device's work.
   * Six calls, each one's CUDA-event time printed: the eager warm-up and the recording, the first
   * replay, the eager run the graph cache compares it with, then three by its decision. A recording
   * that fails prints why (the operation a graph cannot hold) and the bench goes on.
   */
  private static void graphed(
      CudaBackend gpu,
      Precision precision,
      TrainableTransformer model,
      FlowMatching.Batch batch,
      Map<String, Tensor> differentiated,
      AdapterRows adapters) {
    List<Tensor> inputs =
        List.of(
            gpu.upload(batch.x0(), DType.F32),
            gpu.upload(batch.noise(), DType.F32),
            gpu.upload(batch.sigma(), DType.F32),
            gpu.upload(batch.context(), DType.F32));
    GraphKey key =
        GraphKey.of(
            "train-step-bench",
            "transformer",
            "train",
            "FORWARD_BACKWARD",
            precision.name().toLowerCase(java.util.Locale.ROOT),
            "single",
            inputs);
    Function<List<Tensor>, Tensor> body =
        in ->
            model
                .evaluate(
                    new FlowMatching.Batch(in.get(0), in.get(1), in.get(2), in.get(3)),
                    differentiated,
                    adapters)
                .loss();
    try {
      for (int call = 1; call <= 6; call++) {
        Tensor[] loss = new Tensor[1];
        float ms = gpu.context().time(() -> loss[0] = gpu.replayable(key, inputs, body));
        System.out.printf(
            "  forward+backward as a CUDA graph, call %d: %.1f ms, loss %.6f (%s)%n",
            call, ms, gpu.download(loss[0]).getFloat(0), gpu.graphStats());
      }
      System.out.println("  graph against eager: " + gpu.graphComparisons());
    } catch (RuntimeException e) {
      System.out.println("  forward+backward as a CUDA graph: not recorded: " + e);
      // Where the body did what a graph cannot hold: the project's frames, innermost first.
      Arrays.stream(e.getStackTrace())
          .filter(f -> f.getClassName().startsWith("dev.stepweave"))
          .limit(20)
          .forEach(f -> System.out.println("    at " + f));
    }
    gpu.clearGraphs();
  }

  /**
   * A fresh LoRA of {@code rank} on {@code model}, as {@code stepweave train}'s {@code lora} method
   * starts one with its defaults (alpha = rank, {@link LoraFiles#DEFAULT_TARGETS}): its initial
   * file written to a temporary folder and loaded onto the model's backend.
   */
  private static TrainableLora freshLora(TrainableTransformer model, int rank) {
    try {
      Path dir = Files.createTempDirectory("train-step-bench-lora");
      Path file =
          LoraFiles.writeInitial(
              dir.resolve("lora-init.safetensors"),
              model.model().adaptableLayers(),
              new TrainConfig.Method.Lora(rank, rank, List.of()),
              0);
      TrainableLora lora = TrainableLora.load(model, file, 1f);
      Files.delete(file);
      Files.delete(dir);
      return lora;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Each row's noise level: 0.5. */
  private static float[] sigmas(int rows) {
    float[] sigma = new float[rows];
    Arrays.fill(sigma, 0.5f);
    return sigma;
  }

  /**
   * One training step (forward, backward, the optimiser) after a warm-up step whose times are
   * dropped, op by op ({@link OpProfile}: every outermost backend call synchronised and timed, the
   * backward rules' device ops among them; host rules show as the gap to the step's wall time).
   */
  private static void profileOneStep(
      OpProfile profile, FlowMatchingTrainer trainer, FlowMatching.Batch batch, String title) {
    Runnable step = () -> trainer.step(List.of(batch));
    step.run();
    profile.reset();
    long start = System.nanoTime();
    step.run();
    double wall = (System.nanoTime() - start) / 1e6;
    profile.print(String.format("training step %s, %.1f ms wall (profiled)", title, wall));
  }

  /**
   * Steps on the model's backend: of every parameter, or with {@code lora} of its factors alone,
   * the base frozen.
   */
  private static FlowMatchingTrainer trainer(TrainableTransformer model, TrainableLora lora) {
    return lora == null
        ? new FlowMatchingTrainer(model, model.parameters(), n -> AdapterRows.NONE, SETTINGS)
        : FlowMatchingTrainer.lora(model, lora, SETTINGS);
  }
}
