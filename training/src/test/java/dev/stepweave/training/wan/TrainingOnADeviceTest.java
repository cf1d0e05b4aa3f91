package dev.stepweave.training.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.autograd.RecordingBackend.ActivationCheckpointing;
import dev.stepweave.training.autograd.StandInDevice;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.GradientClipping;
import dev.stepweave.training.optim.LearningRate;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.parity.TrainingParity;
import dev.stepweave.training.run.LoraFiles;
import dev.stepweave.training.run.TrainConfig;
import dev.stepweave.training.wan.TrainableTransformer.LossAndGradients;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The training plane's device path, in CI: the tiny DiT recorded over {@link StandInDevice} (the
 * CPU's kernels behind tensors labelled {@code cuda:0}, so a host access of a device tensor fails
 * as on a GPU). Its values are the CPU's bit for bit, so the loss, every gradient and three
 * optimiser steps (the parameters, AdamW's moments, the accumulated gradients and the EMA all on
 * the device) must equal the CPU's exactly: a gradient left on the wrong side, a tensor read from
 * the host without a download, or an update that does not reach what the model computes with fails
 * here. {@code TrainingGradientsGpuTest} is the same on CUDA.
 */
class TrainingOnADeviceTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  private static final CpuBackend CPU = new CpuBackend();
  private static final DiffusersDirectory.Component COMPONENT =
      DiffusersDirectory.open(GOLDEN.resolve("wan21-lora-tiny")).component("transformer");
  private static final WanTransformerConfig CONFIG =
      WanTransformerConfig.fromJson(COMPONENT.config());

  private static FlowMatching.Batch batch() {
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      return TrainingParity.batch(rec);
    }
  }

  private static TrainableTransformer load(TensorSource weights, RecordingBackend backend) {
    return TrainableTransformer.load(CONFIG, weights, backend);
  }

  /**
   * AdamW of the tiny DiT's parameters held on the device (its moments made there too), three steps
   * of the reference gradients with weight decay, and one more after a restore from the host's
   * state: the host's parameters and moments bit for bit. A host parameter handed to the device's
   * optimiser is refused, as CUDA's is.
   */
  @Test
  void adamwOfParametersOnTheDeviceIsTheHosts() {
    StandInDevice device = new StandInDevice();
    AdamW.Settings settings = new AdamW.Settings(0.9, 0.99, 1e-8, 0.01);
    AdamW onHost = new AdamW(settings);
    AdamW onDevice = new AdamW(settings, device);
    Map<String, Tensor> host = new TreeMap<>();
    Map<String, Tensor> there = new TreeMap<>();
    Map<String, Tensor> grads = new TreeMap<>();
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      for (String key : rec.keys()) {
        if (key.startsWith("grad.blocks.0.")) {
          Tensor g = rec.load(key).toHost(DType.F32);
          String name = key.substring("grad.".length());
          float[] start = new float[(int) g.numel()];
          Arrays.fill(start, 0.5f);
          host.put(name, Tensor.of(start.clone(), g.shape()));
          there.put(name, device.upload(Tensor.of(start, g.shape()), DType.F32));
          grads.put(name, g);
        }
      }
    }
    for (int step = 0; step < 3; step++) {
      onHost.step(host, grads, 1e-3);
      onDevice.step(there, grads, 1e-3);
    }
    AdamW resumed = new AdamW(settings, device);
    resumed.restore(onHost.state());
    onHost.step(host, grads, 1e-3);
    resumed.step(there, grads, 1e-3);
    for (String name : host.keySet()) {
      assertArrayEquals(
          host.get(name).toFloatArray(), device.download(there.get(name)).toFloatArray(), name);
    }
    AdamW.State want = onHost.state(), got = resumed.state();
    for (String name : host.keySet()) {
      assertArrayEquals(want.secondMoments().get(name), got.secondMoments().get(name), name);
    }
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () -> new AdamW(settings, device).step(host, grads, 1e-3))
            .getMessage()
            .contains("is not on"));
  }

  /**
   * A flow-matching evaluation whose batch is already on the device moves nothing between host and
   * device — no download, no upload of a host tensor — so a GPU can record it as one CUDA graph
   * (TrainStepBench's {@code graph}; run 37 found a download inside); the first transfer's stack
   * says which rule made it. Both checkpointing modes; the loss read afterwards.
   */
  @Test
  void anEvaluationOnTheDeviceMovesNothingBetweenHostAndDevice() {
    FlowMatching.Batch host = batch();
    for (ActivationCheckpointing checkpointing : ActivationCheckpointing.values()) {
      StandInDevice device = new StandInDevice();
      try (TensorSource weights = COMPONENT.openWeights()) {
        TrainableTransformer model =
            load(weights, new RecordingBackend(device, CPU, checkpointing));
        FlowMatching.Batch batch =
            new FlowMatching.Batch(
                device.upload(host.x0(), DType.F32),
                device.upload(host.noise(), DType.F32),
                device.upload(host.sigma(), DType.F32),
                device.upload(host.context(), DType.F32));
        // A first evaluation makes what a device keeps from its first call (a graph's warm-up).
        model.evaluate(batch, model.parameters(), AdapterRows.NONE);
        device.transfers();
        TrainableTransformer.Evaluation e =
            model.evaluate(batch, model.parameters(), AdapterRows.NONE);
        List<IllegalStateException> moved = device.transfers();
        assertTrue(
            moved.isEmpty(),
            checkpointing
                + ": "
                + moved.size()
                + " transfers, the first "
                + (moved.isEmpty() ? "" : where(moved.getFirst())));
        assertTrue(Float.isFinite(device.download(e.loss()).getFloat(0)));
      }
    }
  }

  /** {@code e}'s message and the project's frames of its stack, innermost first. */
  private static String where(Exception e) {
    return e.getMessage()
        + " at "
        + java.util.Arrays.stream(e.getStackTrace())
            .filter(f -> f.getClassName().startsWith("dev.stepweave"))
            .limit(12)
            .map(StackTraceElement::toString)
            .toList();
  }

  @Test
  void aStepOnTheDeviceIsTheCpusStep() {
    FlowMatching.Batch batch = batch();
    for (ActivationCheckpointing checkpointing : ActivationCheckpointing.values()) {
      LossAndGradients want;
      LossAndGradients got;
      try (TensorSource weights = COMPONENT.openWeights()) {
        TrainableTransformer model = load(weights, new RecordingBackend(CPU, checkpointing));
        want = model.lossAndGradients(batch, model.parameters(), AdapterRows.NONE);
      }
      StandInDevice device = new StandInDevice();
      try (TensorSource weights = COMPONENT.openWeights()) {
        TrainableTransformer model =
            load(weights, new RecordingBackend(device, CPU, checkpointing));
        assertTrue(
            model.parameters().values().stream()
                .allMatch(p -> p.device().kind() == Device.Kind.CUDA),
            "the optimiser's parameters are the device's");
        got = model.lossAndGradients(batch, model.parameters(), AdapterRows.NONE);
      }
      assertEquals(want.loss(), got.loss(), checkpointing.toString());
      assertEquals(want.gradients().keySet(), got.gradients().keySet());
      want.gradients()
          .forEach(
              (name, g) -> {
                Tensor there = got.gradients().get(name);
                assertEquals(Device.Kind.CUDA, there.device().kind(), name + " stays there");
                assertArrayEquals(
                    g.toFloatArray(),
                    device.download(there).toFloatArray(),
                    checkpointing + " " + name);
              });
      assertArrayEquals(
          want.inputGradient().toFloatArray(), got.inputGradient().toFloatArray(), "input");
      // The backward declared each operation's temporaries dead as it went (overwritten with NaN
      // by the stand-in), and none of them was read again: the gradients above are the CPU's.
      assertTrue(device.poisonedBytes() > 0, checkpointing + ": nothing was released");
    }
  }

  /**
   * The leaves' gradients a backward leaves behind die with the optimiser's step that read them
   * (the stand-in overwrites released memory with NaN), not when the garbage collector finds them:
   * on a GPU they are a model's size, and a step's peak would otherwise carry the last step's.
   */
  @Test
  void theGradientsDieWithTheOptimisersStep() {
    StandInDevice device = new StandInDevice();
    try (TensorSource weights = COMPONENT.openWeights()) {
      TrainableTransformer model =
          load(weights, new RecordingBackend(device, CPU, ActivationCheckpointing.OFF));
      Optimiser optimiser = trainer(model).optimiser();
      Map<String, Tensor> seen = new TreeMap<>();
      optimiser.step(
          model.parameters(),
          1,
          i -> {
            var result = model.lossAndGradients(batch(), model.parameters(), AdapterRows.NONE);
            seen.putAll(result.gradients());
            assertTrue(finite(device.download(seen.get("proj_out.weight"))), "read in the step");
            return new Optimiser.Evaluation(1, result.loss(), result.gradients());
          });
      seen.forEach(
          (name, g) ->
              assertTrue(
                  Float.isNaN(device.download(g).toFloatArray()[0]),
                  name + "'s gradient outlived the step"));
      assertTrue(finite(device.download(model.parameters().get("proj_out.weight"))));
    }
  }

  private static boolean finite(Tensor t) {
    for (float v : t.toFloatArray()) {
      if (!Float.isFinite(v)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Three optimiser steps (two micro-batches of the batch each, weight decay, an EMA; no clipping,
   * whose device norm is F32 — {@link #clippingOnTheDeviceIsTheHostsWithinF32}), then a fourth
   * after a fresh optimiser restored the CPU's state: every parameter, EMA average and moment as
   * the CPU's.
   */
  @Test
  void optimiserStepsOnTheDeviceAreTheCpus() {
    Map<String, float[]> want = afterOptimiserSteps(new RecordingBackend(CPU));
    Map<String, float[]> got =
        afterOptimiserSteps(
            new RecordingBackend(new StandInDevice(), CPU, ActivationCheckpointing.OFF));
    assertEquals(want.keySet(), got.keySet());
    assertArrayEquals(want.get("loss"), got.get("loss"), "each step's loss");
    want.forEach((name, w) -> assertArrayEquals(w, got.get(name), name));
  }

  private static final Optimiser.Settings WITH_EMA =
      new Optimiser.Settings(
          new LearningRate.Constant(1e-2), new AdamW.Settings(0.9, 0.999, 1e-8, 0.01), 0, 0.9);

  /**
   * Each step's loss (under "loss"), then every parameter, EMA average ("ema." name) and second
   * moment ("v." name) after three steps and a fourth by an optimiser restored from the third's
   * state.
   */
  private static Map<String, float[]> afterOptimiserSteps(RecordingBackend backend) {
    FlowMatching.Batch batch = batch();
    try (TensorSource weights = COMPONENT.openWeights()) {
      TrainableTransformer model = load(weights, backend);
      FlowMatchingTrainer trainer = trainer(model);
      float[] losses = new float[4];
      for (int step = 0; step < losses.length; step++) {
        if (step == 3) {
          Optimiser.State state = trainer.optimiser().state();
          trainer = trainer(model);
          trainer.optimiser().restore(state);
        }
        losses[step] = (float) trainer.step(List.of(batch, batch)).loss();
      }
      Map<String, float[]> out = new TreeMap<>();
      Optimiser optimiser = trainer.optimiser();
      optimiser.onHost(model.parameters()).forEach((name, p) -> out.put(name, p.toFloatArray()));
      Optimiser.State state = optimiser.state();
      state.ema().forEach((name, a) -> out.put("ema." + name, a));
      state.adamw().secondMoments().forEach((name, v) -> out.put("v." + name, v));
      out.put("loss", losses);
      return out;
    }
  }

  private static FlowMatchingTrainer trainer(TrainableTransformer model) {
    return new FlowMatchingTrainer(model, model.parameters(), n -> AdapterRows.NONE, WITH_EMA);
  }

  /**
   * Clipping by the global norm with the gradients on the device: the norm (an F32 sum of squares
   * per tensor there) within F32 rounding of the host's double-precision norm of the same gradients
   * (the DiT's reference gradients), and an AdamW step clipped to a tenth of that norm (the scaling
   * folded into the device's step, in float) moving every parameter as the host's step does (its
   * gradients scaled in double first) within F32 rounding.
   */
  @Test
  void clippingOnTheDeviceIsTheHostsWithinF32() {
    StandInDevice device = new StandInDevice();
    Map<String, Tensor> host = new TreeMap<>();
    Map<String, Tensor> there = new TreeMap<>();
    try (SafetensorsFile rec =
        SafetensorsFile.open(GOLDEN.resolve("wan21-train-expected/dit_train.safetensors"))) {
      for (String key : rec.keys()) {
        if (key.startsWith("grad.") && !key.equals("grad.hidden_states")) {
          Tensor g = rec.load(key).toHost(DType.F32);
          host.put(key, g);
          there.put(key, device.upload(g, DType.F32));
        }
      }
    }
    double norm = GradientClipping.globalNorm(host, CPU);
    assertEquals(norm, GradientClipping.globalNorm(there, device), 1e-6 * norm);
    double coefficient = GradientClipping.coefficient(norm, norm / 10);
    Map<String, Tensor> onHost = new TreeMap<>(), onDevice = new TreeMap<>();
    host.forEach(
        (name, g) -> {
          Tensor p = Tensor.of(new float[(int) g.numel()], (int) g.numel());
          onHost.put(name, p);
          onDevice.put(name, device.upload(p, DType.F32));
        });
    AdamW.Settings settings = new AdamW.Settings(0.9, 0.99, 1e-8, 0);
    new AdamW(settings).step(onHost, host, 1e-3, coefficient);
    new AdamW(settings, device).step(onDevice, there, 1e-3, coefficient);
    onHost.forEach(
        (name, p) -> {
          float[] w = p.toFloatArray();
          float[] d = device.download(onDevice.get(name)).toFloatArray();
          for (int i = 0; i < w.length; i++) {
            assertEquals(w[i], d[i], 1e-6 * Math.abs(w[i]) + 1e-30, name + "[" + i + "]");
          }
        });
  }

  /**
   * The VAE's reconstruction step on the device (its convolutions' backward on the host, its norms'
   * derived {@code γ·√C} on the device) is the CPU's, and after an update of its masters the
   * reloaded device copies compute what the CPU's reloaded VAE computes.
   */
  @Test
  void theVaesStepOnTheDeviceIsTheCpus() {
    DiffusersDirectory.Component vae =
        DiffusersDirectory.open(GOLDEN.resolve("wan21-tiny")).component("vae");
    WanVaeConfig cfg = WanVaeConfig.fromJson(vae.config());
    float[] video = new float[3 * 5 * 16 * 16];
    for (int i = 0; i < video.length; i++) {
      video[i] = (float) Math.sin(i * 0.37);
    }
    Tensor clip = Tensor.of(video, 1, 3, 5, 16, 16);
    StandInDevice device = new StandInDevice();
    try (TensorSource a = vae.openWeights();
        TensorSource b = vae.openWeights()) {
      TrainableVae onCpu = TrainableVae.load(cfg, a, new RecordingBackend(CPU));
      TrainableVae onDevice =
          TrainableVae.load(cfg, b, new RecordingBackend(device, CPU, ActivationCheckpointing.OFF));
      for (int step = 0; step < 2; step++) {
        TrainableVae.Result want = onCpu.reconstructionStep(clip);
        TrainableVae.Result got = onDevice.reconstructionStep(clip);
        assertEquals(want.loss(), got.loss(), "step " + step);
        assertEquals(want.gradients().keySet(), got.gradients().keySet());
        want.gradients()
            .forEach(
                (name, g) ->
                    assertArrayEquals(
                        g.toFloatArray(),
                        device.download(got.gradients().get(name)).toFloatArray(),
                        name));
        // An optimiser's in-place update of both sides' parameters, then their reloads.
        for (TrainableVae side : List.of(onCpu, onDevice)) {
          Backend on = side.backend();
          side.parameters().forEach((name, p) -> on.copyInto(p, on.affine(p, 0.9f, 0f)));
        }
        onCpu = onCpu.reloaded();
        onDevice = onDevice.reloaded();
      }
    }
  }

  @Test
  void theDitComputesWithItsParametersAndIsNotReloaded() {
    // Its q/k/v parameters are views of one stack; the parts uploaded on their way into it are
    // intermediates, not tensors the model keeps, so an in-place update reaches what it computes —
    // on the CPU and on a device alike, where a reload per step would copy every weight.
    for (RecordingBackend backend :
        List.of(
            new RecordingBackend(CPU),
            new RecordingBackend(new StandInDevice(), CPU, ActivationCheckpointing.OFF))) {
      try (TensorSource weights = COMPONENT.openWeights()) {
        TrainableTransformer model = load(weights, backend);
        assertSame(model, model.reloaded(), backend.name());
      }
    }
  }

  /**
   * Three AdamW steps of a LoRA's factors on the device (F32 masters beside them there, copied into
   * the adapter's factors after each step) are the CPU's, and the base weights are untouched.
   */
  @Test
  void threeLoraStepsOnTheDeviceAreTheCpus() {
    Map<String, float[]> want = afterThreeLoraSteps(new RecordingBackend(CPU));
    Map<String, float[]> got =
        afterThreeLoraSteps(
            new RecordingBackend(new StandInDevice(), CPU, ActivationCheckpointing.OFF));
    assertEquals(want.keySet(), got.keySet());
    want.forEach((name, w) -> assertArrayEquals(w, got.get(name), name));
  }

  private static Map<String, float[]> afterThreeLoraSteps(RecordingBackend backend) {
    FlowMatching.Batch batch = batch();
    Path adapter = GOLDEN.resolve("wan21-lora-tiny/loras/adapter_a_diffusers.safetensors");
    try (TensorSource weights = COMPONENT.openWeights()) {
      TrainableTransformer model = load(weights, backend);
      try (TrainableLora lora = TrainableLora.load(model, adapter, 1f)) {
        AdamW adamw = new AdamW(new AdamW.Settings(0.9, 0.999, 1e-8, 0.0), backend);
        float[] losses = new float[3];
        AdapterRows rows = lora.rows(batch.x0().dim(0));
        for (int step = 0; step < losses.length; step++) {
          LossAndGradients result = model.lossAndGradients(batch, lora.factors(), rows);
          losses[step] = result.loss();
          adamw.step(lora.parameters(), result.gradients(), 1e-2);
          lora.pushed();
        }
        Map<String, float[]> out = new TreeMap<>();
        lora.parameters().forEach((name, p) -> out.put(name, backend.download(p).toFloatArray()));
        out.put("loss", losses);
        return out;
      }
    }
  }

  /**
   * A fresh LoRA as {@code stepweave train} starts one ({@link LoraFiles#writeInitial}: rank 4 on
   * every attention projection, the up factors zero) stepped by {@link FlowMatchingTrainer#lora} on
   * the device, with and without per-block checkpointing: each step's loss and every factor after
   * three steps the CPU's bit for bit; after each step the factors the model computes with equal
   * their F32 masters, the loss and the gradient norm finite and the norm above zero; every factor
   * moved and every base weight untouched. A trainer that differentiated the masters instead of the
   * factors, or did not push the masters into the factors, leaves the device's factors where they
   * started (no clipping here: the device's norm is F32, {@link
   * #clippingOnTheDeviceIsTheHostsWithinF32}).
   */
  @Test
  void aFreshLoraStepsOnTheDeviceAsOnTheCpuAndTrainsOnlyItsFactors(@TempDir Path dir) {
    for (ActivationCheckpointing checkpointing : ActivationCheckpointing.values()) {
      Map<String, float[]> want =
          afterFreshLoraSteps(new RecordingBackend(CPU, checkpointing), dir);
      Map<String, float[]> got =
          afterFreshLoraSteps(new RecordingBackend(new StandInDevice(), CPU, checkpointing), dir);
      assertEquals(want.keySet(), got.keySet());
      want.forEach((name, w) -> assertArrayEquals(w, got.get(name), checkpointing + " " + name));
    }
  }

  /** Each step's loss (under "loss") and every LoRA master after three trainer steps. */
  private static Map<String, float[]> afterFreshLoraSteps(RecordingBackend backend, Path dir) {
    FlowMatching.Batch batch = batch();
    Optimiser.Settings settings =
        new Optimiser.Settings(
            new LearningRate.Constant(1e-2), AdamW.Settings.torchDefaults(), 0, Double.NaN);
    try (TensorSource weights = COMPONENT.openWeights()) {
      TrainableTransformer model = load(weights, backend);
      Map<String, float[]> base = onHost(backend, model.parameters());
      Path file =
          LoraFiles.writeInitial(
              dir.resolve("lora-init.safetensors"),
              model.model().adaptableLayers(),
              new TrainConfig.Method.Lora(4, 4, List.of()),
              7);
      Map<String, float[]> out = new TreeMap<>();
      try (TrainableLora lora = TrainableLora.load(model, file, 1f)) {
        Map<String, float[]> initial = onHost(backend, lora.parameters());
        // Two blocks, two attentions each, q, k, v and out: a down and an up factor each.
        assertEquals(2 * 2 * 4 * 2, initial.size(), initial.keySet().toString());
        FlowMatchingTrainer trainer = FlowMatchingTrainer.lora(model, lora, settings);
        float[] losses = new float[3];
        for (int step = 0; step < losses.length; step++) {
          Optimiser.Step s = trainer.step(List.of(batch));
          losses[step] = (float) s.loss();
          assertTrue(Float.isFinite(losses[step]), "loss " + s.loss());
          assertTrue(
              Double.isFinite(s.gradientNorm()) && s.gradientNorm() > 0,
              "gradient norm " + s.gradientNorm());
          Map<String, float[]> factors = onHost(backend, lora.factors());
          onHost(backend, lora.parameters())
              .forEach(
                  (name, m) ->
                      assertArrayEquals(m, factors.get(name), name + " follows its master"));
        }
        onHost(backend, lora.parameters())
            .forEach(
                (name, m) -> {
                  assertFalse(Arrays.equals(initial.get(name), m), name + " was trained");
                  out.put(name, m);
                });
        out.put("loss", losses);
      }
      onHost(backend, model.parameters())
          .forEach((name, p) -> assertArrayEquals(base.get(name), p, 0f, name + " frozen"));
      return out;
    }
  }

  private static Map<String, float[]> onHost(Backend backend, Map<String, Tensor> tensors) {
    Map<String, float[]> out = new TreeMap<>();
    tensors.forEach((name, t) -> out.put(name, backend.download(t).toFloatArray()));
    return out;
  }
}
