package dev.stepweave.training.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
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
import dev.stepweave.training.parity.TrainingParity;
import dev.stepweave.training.wan.TrainableTransformer.LossAndGradients;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The training plane's device path, in CI: the tiny DiT recorded over {@link StandInDevice} (the
 * CPU's kernels behind tensors labelled {@code cuda:0}, so a host access of a device tensor fails
 * as on a GPU). Its values are the CPU's bit for bit, so the loss, every gradient and three AdamW
 * steps (host masters, the model reloaded after each) must equal the CPU's exactly: a gradient left
 * on the wrong side, read from the host without a download, or a parameter update that does not
 * reach the device copies fails here. {@code TrainingGradientsGpuTest} is the same on CUDA.
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
      try (TensorSource weights = COMPONENT.openWeights()) {
        TrainableTransformer model =
            load(weights, new RecordingBackend(new StandInDevice(), CPU, checkpointing));
        assertTrue(
            model.model().toString() != null
                && model.parameters().values().stream()
                    .allMatch(p -> p.device().kind() == Device.Kind.CPU),
            "the optimiser's parameters are host masters");
        got = model.lossAndGradients(batch, model.parameters(), AdapterRows.NONE);
      }
      assertEquals(want.loss(), got.loss(), checkpointing.toString());
      assertEquals(want.gradients().keySet(), got.gradients().keySet());
      want.gradients()
          .forEach(
              (name, g) ->
                  assertArrayEquals(
                      g.toFloatArray(),
                      got.gradients().get(name).toFloatArray(),
                      checkpointing + " " + name));
      assertArrayEquals(
          want.inputGradient().toFloatArray(), got.inputGradient().toFloatArray(), "input");
    }
  }

  @Test
  void threeAdamWStepsOnTheDeviceAreTheCpus() {
    Map<String, float[]> want = afterThreeSteps(new RecordingBackend(CPU));
    Map<String, float[]> got =
        afterThreeSteps(
            new RecordingBackend(new StandInDevice(), CPU, ActivationCheckpointing.OFF));
    assertEquals(want.keySet(), got.keySet());
    assertArrayEquals(want.get("loss"), got.get("loss"), "each step's loss");
    want.forEach((name, w) -> assertArrayEquals(w, got.get(name), name));
  }

  /** Each step's loss (under "loss") and every parameter after three AdamW steps. */
  private static Map<String, float[]> afterThreeSteps(RecordingBackend backend) {
    FlowMatching.Batch batch = batch();
    try (TensorSource weights = COMPONENT.openWeights()) {
      TrainableTransformer model = load(weights, backend);
      Map<String, Tensor> parameters = model.parameters();
      AdamW adamw = new AdamW(new AdamW.Settings(0.9, 0.999, 1e-8, 0.01));
      float[] losses = new float[3];
      for (int step = 0; step < losses.length; step++) {
        LossAndGradients result = model.lossAndGradients(batch, parameters, AdapterRows.NONE);
        losses[step] = result.loss();
        adamw.step(parameters, result.gradients(), 1e-2);
        model = model.reloaded();
      }
      Map<String, float[]> out = new TreeMap<>();
      parameters.forEach((name, p) -> out.put(name, p.toFloatArray()));
      out.put("loss", losses);
      return out;
    }
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
    try (TensorSource a = vae.openWeights();
        TensorSource b = vae.openWeights()) {
      TrainableVae onCpu = TrainableVae.load(cfg, a, new RecordingBackend(CPU));
      TrainableVae onDevice =
          TrainableVae.load(
              cfg, b, new RecordingBackend(new StandInDevice(), CPU, ActivationCheckpointing.OFF));
      for (int step = 0; step < 2; step++) {
        TrainableVae.Result want = onCpu.reconstructionStep(clip);
        TrainableVae.Result got = onDevice.reconstructionStep(clip);
        assertEquals(want.loss(), got.loss(), "step " + step);
        assertEquals(want.gradients().keySet(), got.gradients().keySet());
        want.gradients()
            .forEach(
                (name, g) ->
                    assertArrayEquals(
                        g.toFloatArray(), got.gradients().get(name).toFloatArray(), name));
        // An optimiser's in-place update of both sides' parameters, then their reloads.
        for (TrainableVae side : List.of(onCpu, onDevice)) {
          side.parameters().forEach((name, p) -> scale(p, 0.9f));
        }
        onCpu = onCpu.reloaded();
        onDevice = onDevice.reloaded();
      }
    }
  }

  /** Scales a host F32 tensor in place, as an optimiser's update would change it. */
  private static void scale(Tensor p, float factor) {
    var seg = p.segment();
    for (long i = 0; i < p.numel(); i++) {
      seg.setAtIndex(
          java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED,
          i,
          factor * seg.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i));
    }
  }

  @Test
  void onTheCpuTheDitComputesWithItsParametersAndIsNotReloaded() {
    // Its q/k/v parameters are views of one stack; the parts uploaded on their way into it are
    // intermediates, not tensors the model keeps, so an in-place update reaches what it computes.
    try (TensorSource weights = COMPONENT.openWeights()) {
      TrainableTransformer model = load(weights, new RecordingBackend(CPU));
      assertSame(model, model.reloaded());
    }
  }

  /**
   * Three AdamW steps of a LoRA's factors on the device (host masters, copied into the adapter's
   * device factors after each step) are the CPU's, and the base weights are untouched.
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
        AdamW adamw = new AdamW(new AdamW.Settings(0.9, 0.999, 1e-8, 0.0));
        float[] losses = new float[3];
        AdapterRows rows = lora.rows(batch.x0().dim(0));
        for (int step = 0; step < losses.length; step++) {
          LossAndGradients result = model.lossAndGradients(batch, lora.factors(), rows);
          losses[step] = result.loss();
          adamw.step(lora.parameters(), result.gradients(), 1e-2);
          lora.pushed();
        }
        Map<String, float[]> out = new TreeMap<>();
        lora.parameters().forEach((name, p) -> out.put(name, p.toFloatArray()));
        out.put("loss", losses);
        return out;
      }
    }
  }
}
