package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.training.autograd.StandInDevice;
import dev.stepweave.training.data.DatasetEncoder;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.shapes.ShapeSample;
import dev.stepweave.training.shapes.ShapesDataset;
import dev.stepweave.training.wan.TrainableLora;
import dev.stepweave.training.wan.TrainableTransformer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Whole runs of {@link TrainingRun} on the embedded model, kept small (five-frame 64×64 shapes
 * clips: 32 tokens) so each takes seconds on two cores.
 */
class TrainingRunTest {
  @TempDir static Path home;
  @TempDir Path tmp;
  private static Path base;

  @BeforeAll
  static void embedded() {
    base = EmbeddedWan.ensure(home);
  }

  private static final TrainingRun.Listener QUIET =
      new TrainingRun.Listener() {
        @Override
        public void note(String message) {}

        @Override
        public void step(Optimiser.Step step, int totalSteps, double seconds) {}
      };

  private TrainConfig config(String name, String extra) throws Exception {
    String yaml =
        "base: "
            + base
            + "\ncomponent: transformer\ndata: {type: shapes, clips: 4, seed: 1, frames: 5}\n"
            + extra
            + "output: "
            + name
            + "\n";
    return TrainConfigReader.read(Files.writeString(tmp.resolve(name + ".yaml"), yaml));
  }

  @Test
  void theLossFallsOnShapes() throws Exception {
    TrainConfig c =
        config(
            "fall",
            // From fresh weights: the shipped transformer has little left to learn here.
            "init: {seed: 1}\nsteps: 12\nbatch: 4\nmicro_batch: 2\nlearning_rate: 3e-3\nseed: 1\n"
                + "schedule: {type: warmup, warmup: 2}\n");
    TrainingRun.Result r = TrainingRun.run(c, false, null, QUIET);

    List<LossLog.Row> log = LossLog.read(c.output().resolve(LossLog.FILE));
    assertEquals(12, log.size());
    double first = (log.get(0).loss() + log.get(1).loss() + log.get(2).loss()) / 3;
    double last = (log.get(9).loss() + log.get(10).loss() + log.get(11).loss()) / 3;
    assertTrue(last < 0.8 * first, "loss fell from " + first + " to only " + last);
    assertEquals(c.output().resolve("model"), r.artifact());
  }

  @Test
  void theBaseMayBeGivenAsItsCardFile() throws Exception {
    String yaml =
        "base: "
            + base.resolve(CardJson.FILE_NAME)
            + "\ncomponent: transformer\ndata: {type: shapes, clips: 2}\nsteps: 1\noutput: o\n";
    TrainConfig c = TrainConfigReader.read(Files.writeString(tmp.resolve("card.yaml"), yaml));
    assertEquals(base.toAbsolutePath(), c.base());
  }

  @Test
  void aRunKeepsOnlyItsNewestCheckpointsAndResumesFromTheNewest() throws Exception {
    TrainConfig c = config("kept", "steps: 4\ncheckpoint_every: 1\nkeep_checkpoints: 2\n");
    TrainingRun.run(c, false, null, QUIET, 3);
    assertEquals(List.of("step-000002", "step-000003"), checkpoints(c));
    TrainingRun.Result resumed = TrainingRun.run(c, true, null, QUIET);
    assertEquals(3, resumed.startStep());
    assertEquals(List.of("step-000003", "step-000004"), checkpoints(c));
  }

  private static List<String> checkpoints(TrainConfig c) throws Exception {
    try (var dirs = Files.list(c.output().resolve("checkpoints"))) {
      return dirs.map(d -> d.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void aResumedRunEndsBitForBitWhereTheStraightRunEnds() throws Exception {
    String settings =
        "steps: 4\nbatch: 2\nlearning_rate: 2e-3\nema: 0.9\ncaption_dropout: 0.5\n"
            + "schedule: {type: cosine, warmup: 1}\nseed: 5\ncheckpoint_every: 2\n";
    TrainConfig straight = config("straight", settings);
    TrainingRun.run(straight, false, null, QUIET);

    TrainConfig interrupted = config("interrupted", settings);
    TrainingRun.Result stopped = TrainingRun.run(interrupted, false, null, QUIET, 2);
    assertNull(stopped.artifact());
    TrainConfigException again =
        assertThrows(
            TrainConfigException.class, () -> TrainingRun.run(interrupted, false, null, QUIET));
    assertTrue(again.getMessage().contains("pass --resume"), again.getMessage());
    TrainingRun.Result resumed = TrainingRun.run(interrupted, true, null, QUIET);
    assertEquals(2, resumed.startStep());

    for (String file :
        List.of(
            "model/transformer/diffusion_pytorch_model.safetensors",
            "checkpoints/step-000004/weights.safetensors",
            "checkpoints/step-000004/optimizer.safetensors")) {
      assertArrayEquals(
          Files.readAllBytes(straight.output().resolve(file)),
          Files.readAllBytes(interrupted.output().resolve(file)),
          file);
    }
    assertEquals(losses(straight), losses(interrupted));
  }

  /**
   * A full fine-tune computed on a device ({@link StandInDevice}: the CPU's kernels behind tensors
   * labelled cuda:0), its optimiser there too, is the CPU's run to the last bit — losses and
   * weights — and its card says where it computed. Without clipping: a device's global norm is an
   * F32 sum there (TrainingOnADeviceTest bounds it), so the logged norms agree to F32 rounding.
   */
  @Test
  void aRunOnADeviceIsTheCpusRunAndItsCardSaysWhere() throws Exception {
    String settings = "init: {seed: 1}\nsteps: 3\nbatch: 2\nseed: 1\nmax_grad_norm: 0\n";
    TrainConfig cpu = config("on-cpu", settings);
    TrainConfig device = config("on-device", settings);
    Path cpuModel = TrainingRun.run(cpu, false, null, QUIET).artifact();
    Path deviceModel =
        TrainingRun.run(device, false, null, QUIET, device.steps(), new StandInDevice()).artifact();
    assertSameLosses(cpu, device);
    assertArrayEquals(
        Files.readAllBytes(cpuModel.resolve("transformer/diffusion_pytorch_model.safetensors")),
        Files.readAllBytes(deviceModel.resolve("transformer/diffusion_pytorch_model.safetensors")));
    String provenance =
        CardJson.read(deviceModel.resolve(CardJson.FILE_NAME)).recipe().provenance();
    assertTrue(provenance.contains("f32 on stand-in cuda:0"), provenance);
    assertTrue(
        CardJson.read(cpuModel.resolve(CardJson.FILE_NAME))
            .recipe()
            .provenance()
            .contains("f32 on the CPU"));

    // A LoRA run likewise: the same losses and the same adapter files.
    String lora =
        "steps: 2\nbatch: 2\nlearning_rate: 1e-2\nseed: 1\nmax_grad_norm: 0\n"
            + "method: {type: lora, rank: 2, alpha: 4, targets: [attn1.to_q, ffn.net.0.proj]}\n";
    TrainConfig loraCpu = config("lora-cpu", lora);
    TrainConfig loraDevice = config("lora-device", lora);
    Path cpuAdapter = TrainingRun.run(loraCpu, false, null, QUIET).artifact();
    Path deviceAdapter =
        TrainingRun.run(loraDevice, false, null, QUIET, loraDevice.steps(), new StandInDevice())
            .artifact();
    assertSameLosses(loraCpu, loraDevice);
    assertArrayEquals(
        Files.readAllBytes(cpuAdapter.resolve("adapter_diffusers.safetensors")),
        Files.readAllBytes(deviceAdapter.resolve("adapter_diffusers.safetensors")));
  }

  /**
   * {@code precision: bf16} is a GPU's: on the CPU, or on a backend computing in f32, the run is
   * refused with one line naming the key before it trains or writes a step.
   */
  @Test
  void bf16TrainsOnlyOnABackendThatComputesInIt() throws Exception {
    TrainConfig bf16 = config("bf16", "steps: 1\nprecision: bf16\n");
    TrainConfigException onCpu =
        assertThrows(TrainConfigException.class, () -> TrainingRun.run(bf16, false, null, QUIET));
    assertTrue(
        onCpu.getMessage().startsWith("precision: bf16 computes on a GPU"), onCpu.getMessage());
    TrainConfig again = config("bf16-device", "steps: 1\nprecision: bf16\n");
    TrainConfigException inF32 =
        assertThrows(
            TrainConfigException.class,
            () -> TrainingRun.run(again, false, null, QUIET, 1, new StandInDevice()));
    assertEquals(
        "precision: the config trains in bf16 but stand-in cuda:0 (the CPU's kernels) computes in"
            + " f32",
        inF32.getMessage());
    assertFalse(Files.exists(bf16.output()), "nothing written");
  }

  @Test
  void theCheckpointLoadsThroughTheOrdinaryLoaderWithTheRunsRecipe() throws Exception {
    TrainConfig c = config("card", "steps: 1\nmodel_id: shapes-tiny\n");
    Path model = TrainingRun.run(c, false, null, QUIET).artifact();

    ModelCard card = CardJson.read(model.resolve(CardJson.FILE_NAME));
    assertEquals("shapes-tiny", card.modelId());
    RecipeSpec recipe = card.recipe();
    assertEquals("full", recipe.method());
    assertEquals(List.of(EmbeddedWan.MODEL_ID), recipe.parents());
    assertEquals(CheckpointCopy.weightsHash(base.resolve("transformer")), recipe.parentWeights());
    assertTrue(
        recipe.data().datasetId().startsWith("shapes seed 1, 64x64, 5 frames"),
        recipe.data().datasetId());
    assertEquals(64, recipe.data().sha256().length());
    assertEquals("denoise", recipe.assumesLoop());
    try (WanModel loaded = WanModel.load(model, new CpuBackend(2))) {
      assertEquals("shapes-tiny", loaded.card().modelId());
    }
    // The trained transformer differs from the base's; the VAE is the base's, byte for byte.
    assertFalse(
        java.util.Arrays.equals(
            Files.readAllBytes(base.resolve("transformer/diffusion_pytorch_model.safetensors")),
            Files.readAllBytes(model.resolve("transformer/diffusion_pytorch_model.safetensors"))));
    assertArrayEquals(
        Files.readAllBytes(base.resolve("vae/diffusion_pytorch_model.safetensors")),
        Files.readAllBytes(model.resolve("vae/diffusion_pytorch_model.safetensors")));
  }

  /**
   * {@code method: distill} on the tiny golden checkpoint: the teacher's samples cut at the
   * student's 4 steps are the data, the loss falls, and the run writes a card of its own whose
   * recipe pins Euler, 4 steps and no guidance, with the teacher as parent and the data contract,
   * and that the engine serves and holds to it.
   */
  @Test
  void aDistillationWritesAFewStepCardWhoseRecipeHasTeeth() throws Exception {
    Path teacher = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");
    String yaml =
        "base: "
            + teacher
            + "\ncomponent: transformer\nmodel_id: tiny-4step\n"
            + "method: {type: distill, student_steps: 4, teacher_steps: 12, teacher_guidance: 5}\n"
            + "data: {type: prompts, prompts: [a red ball, a blue square], samples_per_prompt: 2,"
            + " seed: 3, width: 32, height: 32, frames: 5}\n"
            + "steps: 12\nbatch: 4\nlearning_rate: 3e-3\nschedule: {type: constant}\n"
            + "weight_decay: 0\nseed: 5\noutput: distilled\n";
    TrainConfig c = TrainConfigReader.read(Files.writeString(tmp.resolve("distill.yaml"), yaml));
    Path model = TrainingRun.run(c, false, null, QUIET).artifact();
    List<Double> loss = losses(c).stream().map(r -> r.get(1)).toList();
    assertTrue(
        loss.subList(8, 12).stream().mapToDouble(d -> d).sum()
            < loss.subList(0, 4).stream().mapToDouble(d -> d).sum(),
        "the segment loss falls: " + loss);

    ModelCard card = CardJson.read(model.resolve(CardJson.FILE_NAME));
    RecipeSpec recipe = card.recipe();
    assertEquals("tiny-4step", card.modelId());
    assertEquals("distill", recipe.method());
    assertEquals(List.of("wan21-tiny"), recipe.parents());
    assertEquals("euler", recipe.assumesSampler());
    assertEquals(4, recipe.assumesSteps());
    assertEquals(1.0, recipe.assumesGuidance());
    assertTrue(recipe.data().datasetId().startsWith("teacher wan21-tiny samples: 2 prompts x 2"));
    assertTrue(
        recipe.provenance().contains("12 optimiser steps of 4 segments"), recipe.provenance());
    assertEquals(4, card.defaults().steps());
    try (WanModel served = WanModel.load(model, new CpuBackend(2));
        Engine engine = new Engine(served)) {
      Request request =
          Request.builder(
                  TaskType.T2V,
                  new DiffusionParams(
                      4, 1.0, 7, 32, 32, 5, 8, "", Optional.empty(), Optional.empty()))
              .prompt("a red ball")
              .build();
      assertEquals(
          5,
          engine
              .submit(request)
              .result()
              .get(60, TimeUnit.SECONDS)
              .artifact(Artifact.VideoArtifact.class)
              .frames()
              .dim(0),
          "its defaults' 4 unguided Euler steps run");
      var refused =
          assertThrows(
              RecipeRefusedException.class,
              () ->
                  engine.submit(
                      request.withParams(
                          request.params().withSampling(50, 5.0, Optional.of("unipc")))));
      assertTrue(
          refused.getMessage().contains("sampler unipc (recipe assumes euler)"),
          refused.getMessage());
    }
  }

  private TrainConfig nft(String name) throws Exception {
    String yaml =
        "base: "
            + base
            + "\ncomponent: transformer\nmodel_id: shapes-nft\n"
            + "method: {type: nft, beta: 1.0, sampling_steps: 2, sampler: euler, reward: shapes}\n"
            + "data: {type: prompts, prompts: [a red ball moving left on a black background,"
            + " a blue square moving up on a gray background], samples_per_prompt: 2, seed: 3,"
            + " frames: 5}\n"
            + "evaluation: {prompts: [a green ball moving right on a purple background], seed: 100,"
            + " every: 2}\n"
            + "steps: 3\nbatch: 2\nlearning_rate: 1e-3\nschedule: {type: constant}\n"
            + "weight_decay: 0\nseed: 5\ncheckpoint_every: 1\noutput: "
            + name
            + "\n";
    return TrainConfigReader.read(Files.writeString(tmp.resolve(name + ".yaml"), yaml));
  }

  /**
   * An NFT run rolls each step's group out through its own serving engine and scores it with the
   * shapes judge: every step's row carries the group's mean reward, the held-out reward is measured
   * before the first step, every second step and after the last, the card says how the weights were
   * made and defaults to the CFG-free sampling it was trained for, and a run interrupted after one
   * step and resumed ends bit for bit where the straight run ends (the rollouts, the rewards and
   * the noise are functions of the seed, the step and the weights).
   */
  @Test
  void anNftRunLogsItsRewardsWritesItsCardAndResumesBitForBit() throws Exception {
    TrainConfig straight = nft("nft-straight");
    Path model = TrainingRun.run(straight, false, null, QUIET).artifact();
    List<LossLog.Row> log = LossLog.read(straight.output().resolve(LossLog.FILE));
    assertEquals(3, log.size());
    for (LossLog.Row r : log) {
      assertTrue(r.reward() >= 0 && r.reward() <= 1, "group reward " + r.reward());
    }
    List<RewardLog.Row> heldOut = RewardLog.read(straight.output().resolve(RewardLog.FILE));
    assertEquals(List.of(0, 2, 3), heldOut.stream().map(RewardLog.Row::step).toList());

    ModelCard card = CardJson.read(model.resolve(CardJson.FILE_NAME));
    assertEquals("shapes-nft", card.modelId());
    assertEquals("nft", card.recipe().method());
    assertTrue(card.recipe().provenance().contains("DiffusionNFT"), card.recipe().provenance());
    assertTrue(
        card.recipe().data().datasetId().startsWith("on-policy rollouts: 2 prompts, groups of 2"),
        card.recipe().data().datasetId());
    assertEquals(2, card.defaults().steps());
    assertEquals(1.0, card.defaults().guidance());

    TrainConfig interrupted = nft("nft-interrupted");
    assertNull(TrainingRun.run(interrupted, false, null, QUIET, 1).artifact());
    assertEquals(1, TrainingRun.run(interrupted, true, null, QUIET).startStep());
    assertArrayEquals(
        Files.readAllBytes(
            straight.output().resolve("model/transformer/diffusion_pytorch_model.safetensors")),
        Files.readAllBytes(
            interrupted.output().resolve("model/transformer/diffusion_pytorch_model.safetensors")));
    assertEquals(
        LossLog.read(straight.output().resolve(LossLog.FILE)).stream()
            .map(r -> List.of(r.loss(), r.reward()))
            .toList(),
        LossLog.read(interrupted.output().resolve(LossLog.FILE)).stream()
            .map(r -> List.of(r.loss(), r.reward()))
            .toList());
    assertEquals(heldOut, RewardLog.read(interrupted.output().resolve(RewardLog.FILE)));
  }

  @Test
  void aLoraIsWrittenInBothLayoutsTheAdapterLoaderReadsAlike() throws Exception {
    TrainConfig c =
        config(
            "lora",
            "steps: 2\nbatch: 2\nlearning_rate: 1e-2\n"
                + "method: {type: lora, rank: 2, alpha: 4, targets: [attn1.to_q, ffn.net.0.proj]}\n");
    Path lora = TrainingRun.run(c, false, null, QUIET).artifact();

    DiffusersDirectory d = DiffusersDirectory.open(base);
    DiffusersDirectory.Component t = d.component("transformer");
    try (var weights = t.openWeights()) {
      TrainableTransformer model =
          TrainableTransformer.load(
              WanTransformerConfig.fromJson(t.config()), weights, new CpuBackend(2));
      try (TrainableLora diffusers =
              TrainableLora.load(model, lora.resolve("adapter_diffusers.safetensors"), 1f);
          TrainableLora wan =
              TrainableLora.load(model, lora.resolve("adapter_wan.safetensors"), 1f)) {
        Map<String, dev.stepweave.tensor.Tensor> a = diffusers.parameters();
        Map<String, dev.stepweave.tensor.Tensor> b = wan.parameters();
        // blocks × 2 targets × (down, up)
        assertEquals(model.model().config().numLayers() * 2 * 2, a.size());
        assertEquals(a.keySet(), b.keySet());
        a.forEach(
            (name, f) -> assertArrayEquals(f.toFloatArray(), b.get(name).toFloatArray(), name));
        // Trained: the up factors started at zero and moved.
        assertTrue(
            a.entrySet().stream()
                .filter(e -> e.getKey().endsWith("lora_B.weight"))
                .allMatch(e -> norm(e.getValue().toFloatArray()) > 0));
      }
    }
    try (SafetensorsFile f = SafetensorsFile.open(lora.resolve("adapter_diffusers.safetensors"))) {
      assertEquals("{\"r\":2,\"lora_alpha\":4.0}", f.metadata().get("lora_adapter_metadata"));
    }
    String recipe = Files.readString(lora.resolve("recipe.json"));
    assertTrue(recipe.contains("\"method\" : \"lora\""), recipe);
  }

  @Test
  void aVaeTrainsFromFreshWeightsOfOtherDimensions() throws Exception {
    String yaml =
        "base: "
            + base
            + "\ncomponent: vae\ninit: {seed: 3, config: {base_dim: 2}}\n"
            + "data: {type: shapes, clips: 2, seed: 1, frames: 5}\nsteps: 1\nlearning_rate: 1e-3\n"
            + "output: vae\n";
    TrainConfig c = TrainConfigReader.read(Files.writeString(tmp.resolve("vae.yaml"), yaml));
    Path model = TrainingRun.run(c, false, null, QUIET).artifact();

    assertEquals(1, LossLog.read(c.output().resolve(LossLog.FILE)).size());
    assertTrue(Files.readString(model.resolve("vae/config.json")).contains("\"base_dim\" : 2"));
    try (WanModel loaded = WanModel.load(model, new CpuBackend(2))) {
      assertEquals(c.modelId(), loaded.card().modelId());
      // The run measured the fresh VAE's latent statistics over its clips: served, their
      // normalised latents have zero mean and unit deviation per channel.
      DatasetEncoder encoder = new DatasetEncoder(loaded);
      ShapesDataset shapes = new ShapesDataset(1, 64, 64, 5);
      int z = loaded.vae().config().zDim();
      double[] sum = new double[z];
      double[] squares = new double[z];
      long n = 0;
      for (int i = 0; i < 2; i++) {
        ShapeSample s = shapes.sample(i);
        float[] latents =
            encoder.encode(s.id(), s.caption().text(), s.clip()).latents().toFloatArray();
        int plane = latents.length / z;
        for (int ch = 0; ch < z; ch++) {
          for (int k = 0; k < plane; k++) {
            double v = latents[ch * plane + k];
            sum[ch] += v;
            squares[ch] += v * v;
          }
        }
        n += plane;
      }
      for (int ch = 0; ch < z; ch++) {
        double mean = sum[ch] / n;
        double std = Math.sqrt(squares[ch] / n - mean * mean);
        assertEquals(0, mean, 1e-4, "channel " + ch + " mean");
        assertEquals(1, std, 1e-3, "channel " + ch + " std");
      }
    }
  }

  @Test
  void refusesAnInitKeyTheComponentDoesNotHave() throws Exception {
    TrainConfig c = config("badinit", "steps: 1\ninit: {seed: 1, config: {num_layer: 4}}\n");
    TrainConfigException e =
        assertThrows(TrainConfigException.class, () -> TrainingRun.run(c, false, null, QUIET));
    assertTrue(
        e.getMessage()
            .contains(
                "init.config: 'num_layer' is not a key of the base's transformer/config.json"),
        e.getMessage());
  }

  @Test
  void refusesALoraTargetThatMatchesNoLayer() throws Exception {
    TrainConfig c =
        config("badtarget", "steps: 1\nmethod: {type: lora, rank: 2, targets: [to_qq]}\n");
    TrainConfigException e =
        assertThrows(TrainConfigException.class, () -> TrainingRun.run(c, false, null, QUIET));
    assertEquals(
        "method.targets: 'to_qq' matches no adaptable layer of the transformer", e.getMessage());
  }

  private static List<List<Double>> losses(TrainConfig c) throws Exception {
    List<List<Double>> out = new ArrayList<>();
    for (LossLog.Row r : LossLog.read(c.output().resolve(LossLog.FILE))) {
      out.add(List.of((double) r.step(), r.loss(), r.lr(), r.gradNorm()));
    }
    return out;
  }

  /** The same steps, losses and rates bit for bit; gradient norms within F32 rounding. */
  private static void assertSameLosses(TrainConfig want, TrainConfig got) throws Exception {
    List<List<Double>> a = losses(want), b = losses(got);
    assertEquals(a.size(), b.size());
    for (int i = 0; i < a.size(); i++) {
      assertEquals(a.get(i).subList(0, 3), b.get(i).subList(0, 3), "step " + (i + 1));
      assertEquals(a.get(i).get(3), b.get(i).get(3), 1e-6 * a.get(i).get(3), "norm " + (i + 1));
    }
  }

  private static double norm(float[] v) {
    double s = 0;
    for (float x : v) {
      s += x * x;
    }
    return Math.sqrt(s);
  }
}
