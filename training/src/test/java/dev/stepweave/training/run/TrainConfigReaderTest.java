package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Precision;
import dev.stepweave.training.shapes.ShapesDataset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TrainConfigReaderTest {
  @TempDir Path tmp;

  private static final String MINIMAL =
      """
      component: transformer
      data: {type: shapes, clips: 4}
      steps: 10
      output: out
      """;

  @Test
  void readsAMinimalYamlConfigWithItsDefaults() throws Exception {
    TrainConfig c = TrainConfigReader.read(write("run.yaml", MINIMAL));

    assertNull(c.base()); // the embedded model
    assertEquals(TrainConfig.Component.TRANSFORMER, c.component());
    assertEquals(new TrainConfig.Data.Shapes(4, new ShapesDataset(0, 64, 64, 9)), c.data());
    assertEquals(
        new TrainConfig.Data.Shapes(4, new ShapesDataset(0, 64, 64, 9, 24, 40, 0)),
        TrainConfigReader.read(
                write(
                    "sizes.yaml", MINIMAL.replace("clips: 4}", "clips: 4, object_size: [24, 40]}")))
            .data());
    assertInstanceOf(TrainConfig.Method.Full.class, c.method());
    assertEquals(1, c.batch());
    assertEquals(1, c.microBatch());
    assertEquals(1e-4, c.learningRate());
    assertEquals(new TrainConfig.Schedule(TrainConfig.ScheduleKind.CONSTANT, 0), c.schedule());
    assertEquals(new TrainConfig.Adam(0.9, 0.999, 1e-8, 0.01), c.adamw());
    assertEquals(1.0, c.maxGradNorm());
    assertTrue(Double.isNaN(c.emaDecay()));
    assertEquals(Precision.F32, c.precision());
    assertEquals(10, c.checkpointEvery());
    assertEquals(tmp.resolve("out"), c.output()); // relative to the config's folder
    assertEquals("out", c.modelId());
  }

  @Test
  void readsEveryKeyFromJson() throws Exception {
    Path base = Files.createDirectories(tmp.resolve("base"));
    String json =
        """
        {"base": "base", "model_id": "mine", "component": "transformer",
         "data": {"type": "shapes", "clips": 8, "seed": 3, "width": 96, "height": 64, "frames": 5},
         "method": {"type": "lora", "rank": 4, "alpha": 8, "targets": ["attn1.to_q", "to_v"]},
         "steps": 20, "batch": 4, "micro_batch": 2, "learning_rate": 0.002,
         "schedule": {"type": "cosine", "warmup": 5}, "adamw": {"beta1": 0.8, "beta2": 0.99, "eps": 1e-6},
         "weight_decay": 0.1, "max_grad_norm": 0, "ema": 0.99, "flow_shift": 3.0,
         "sigma_range": [0.85, 1.0], "caption_dropout": 0.1, "precision": "bf16", "seed": 9, "checkpoint_every": 5, "output": "o"}
        """;
    TrainConfig c = TrainConfigReader.read(write("run.json", json));

    assertEquals(base, c.base());
    assertEquals("mine", c.modelId());
    assertEquals(new TrainConfig.Data.Shapes(8, new ShapesDataset(3, 96, 64, 5)), c.data());
    assertEquals(new TrainConfig.Method.Lora(4, 8, List.of("attn1.to_q", "to_v")), c.method());
    assertEquals(2, c.microBatch());
    assertEquals(new TrainConfig.Schedule(TrainConfig.ScheduleKind.COSINE, 5), c.schedule());
    assertEquals(new TrainConfig.Adam(0.8, 0.99, 1e-6, 0.1), c.adamw());
    assertEquals(0.0, c.maxGradNorm());
    assertEquals(0.99, c.emaDecay());
    assertEquals(new NoiseLevels(3.0, 0.85, 1.0), c.noiseLevels());
    assertEquals("[0.85,1.0]", c.canonical().get("sigma_range").toString());
    assertEquals(0.1, c.captionDropout());
    assertEquals(Precision.BF16, c.precision());
    assertEquals(9, c.seed());
    assertEquals(5, c.checkpointEvery());
  }

  @Test
  void readsInitAndAVaeRunOnAFolder() throws Exception {
    Files.createDirectories(tmp.resolve("clips"));
    TrainConfig c =
        TrainConfigReader.read(
            write(
                "vae.yml",
                """
                component: vae
                init: {seed: 4, past_frames: zero, config: {base_dim: 8}}
                data: {type: folder, path: clips}
                steps: 3
                output: o
                """));

    assertEquals(TrainConfig.Component.VAE, c.component());
    assertEquals(4, c.init().seed());
    assertEquals(8, c.init().config().get("base_dim").intValue());
    assertTrue(c.init().pastFramesZero());
    assertEquals(new TrainConfig.Data.Folder(tmp.resolve("clips")), c.data());
    assertTrue(c.measureLatentStatistics()); // a fresh VAE measures its latent scale
    TrainConfig fineTune =
        TrainConfigReader.read(
            write(
                "ft.yml",
                "component: vae\ndata: {type: folder, path: clips}\nsteps: 3\noutput: o\n"));
    assertFalse(fineTune.measureLatentStatistics()); // a fine-tune keeps the base's scale
    assertRefused(
        "component: vae\ndata: {type: folder, path: clips}\nsteps: 3\noutput: o\nlatent_statistics: guess\n",
        "'latent_statistics' must be measure or keep, got 'guess'");
  }

  /** Each bad input gets one line naming the file and the key. */
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      value = {
        "stepz: 3|'stepz' unknown key (known: adamw, base, batch",
        "component: unet|'component' must be transformer or vae, got 'unet'",
        "steps: 0|'steps' must be a positive integer, got 0",
        "steps: ten|'steps' must be a positive integer, got \"ten\"",
        "batch: 3\\nmicro_batch: 2|'micro_batch' 2 does not divide batch 3",
        "precision: f16|'precision' must be f32 or bf16, got 'f16'",
        "precision: f64|'precision' must be f32 or bf16, got 'f64'",
        "learning_rate: -1|'learning_rate' must be > 0, got -1.0",
        "learning_rate: fast|'learning_rate' must be a number, got \"fast\"",
        "ema: 1.5|'ema' must lie in [0, 1], got 1.5",
        "max_grad_norm: -1|'max_grad_norm' must be ≥ 0 (0: no clipping), got -1.0",
        "caption_dropout: 2|'caption_dropout' must lie in [0, 1], got 2.0",
        "schedule: {type: cosine, warmup: 10}|'schedule.warmup' 10 must be less than steps 10",
        "schedule: {type: warmup}|'schedule.warmup' a warm-up schedule needs warmup ≥ 1",
        "schedule: {type: step}|'schedule.type' must be constant, warmup or cosine, got 'step'",
        "schedule: {type: constant, decay: 1}|'schedule.decay' unknown key",
        "adamw: {beta1: 1}|'adamw.beta1' must lie in [0, 1), got 1.0",
        "adamw: {momentum: 1}|'adamw.momentum' unknown key",
        "method: {type: lora}|'method.rank' is required",
        "method: {type: lora, rank: 4, alpha: 0}|'method.alpha' must be > 0, got 0.0",
        "method: {type: lora, rank: 4, targets: to_q}|'method.targets' must be a list of layer names",
        "method: {type: dora}|'method.type' must be full, lora, distill or nft, got 'dora'",
        "method: {type: distill}|'data.type' distill rolls the base out on prompts: data must be of type prompts",
        "method: {type: nft}|'method.reward' is required (shapes or shapes-color)",
        "method: {type: nft, reward: aesthetic}|'method.reward' must be shapes or shapes-color, got 'aesthetic'",
        "method: {type: nft, reward: shapes, beta: 0}|'method.beta' must be > 0, got 0.0",
        "method: {type: nft, reward: shapes, sampler: ddim}|'method.sampler' must be one of unipc, euler, sde, got 'ddim'",
        "method: {type: nft, reward: shapes}|'data.type' nft rolls the base out on prompts: data must be of type prompts",
        "evaluation: {prompts: [a]}|'evaluation' applies to method nft only",
        "method: {type: distill, student_steps: 4, teacher_steps: 4}|'method.teacher_steps' must exceed student_steps 4, got 4",
        "method: {type: distill, teacher_guidance: -1}|'method.teacher_guidance' must be ≥ 0, got -1.0",
        "method: {type: distill, temperature: 1}|'method.temperature' unknown key",
        "method: {type: lora, rank: 2}\\ninit: {seed: 1}|'init' re-initialises a full fine-tune's component",
        "init: {seed: 1, dims: {}}|'init.dims' unknown key",
        "init: {seed: 1, past_frames: none}|'init.past_frames' must be random or zero, got 'none'",
        "init: {seed: 1, past_frames: zero}|'init.past_frames' applies to a VAE's causal convolutions only",
        "base: missing|'base' directory not found: ",
        "checkpoint_every: 0|'checkpoint_every' must be a positive integer, got 0",
        "keep_checkpoints: 0|'keep_checkpoints' must be a positive integer, got 0",
        "flow_shift: 0|'flow_shift' must be > 0, got 0.0",
        "sigma_range: 0.8|'sigma_range' must be [lowest, highest] noise levels, got 0.8",
        "sigma_range: [0.9, 0.8]|'sigma_range' the σ range must satisfy 0 ≤ lowest < highest ≤ 1, got [0.9, 0.8]",
        "sigma_range: [0.5, 1.5]|'sigma_range' the σ range must satisfy 0 ≤ lowest < highest ≤ 1, got [0.5, 1.5]",
        "latent_statistics: measure|'latent_statistics' applies to component vae only",
      })
  void refusesABadValueNamingItsKey(String extra, String expected) throws Exception {
    String yaml = MINIMAL + extra.replace("\\n", "\n") + "\n";
    TrainConfigException e =
        assertThrows(
            TrainConfigException.class, () -> TrainConfigReader.read(write("bad.yaml", yaml)));
    assertTrue(
        e.getMessage().startsWith("config " + tmp.resolve("bad.yaml") + ": " + expected),
        e.getMessage());
    assertEquals(1, e.getMessage().lines().count(), e.getMessage());
  }

  @Test
  void refusesMissingKeysAndDataThatDoesNotFitTheComponent() throws Exception {
    assertRefused("component: vae\nsteps: 1\noutput: o\n", "'data' is required");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2}\noutput: o\n", "'steps' is required");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2}\nsteps: 1\n", "'output' is required");
    assertRefused(
        "data: {type: shapes, clips: 2}\nsteps: 1\noutput: o\n", "'component' is required");
    assertRefused(
        "component: vae\ndata: {type: video, clips: 2}\nsteps: 1\noutput: o\n",
        "'data.type' must be shapes, folder, shards or prompts, got 'video'");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2, width: 32}\nsteps: 1\noutput: o\n",
        "'data' ");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2, object_size: 20}\nsteps: 1\noutput: o\n",
        "'data.object_size' must be [smallest, largest] in pixels, got 20");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2, object_size: [8, 50]}\nsteps: 1\noutput: o\n",
        "'data' a 50-pixel object cannot travel a third of a 64x64 frame");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2, min_travel: 0}\nsteps: 1\noutput: o\n",
        "'data.min_travel' must be a positive integer, got 0");
    Files.createDirectories(tmp.resolve("shards"));
    assertRefused(
        "component: vae\ndata: {type: shards, path: shards}\nsteps: 1\noutput: o\n",
        "'data.type' 'shards' holds latents; component vae trains on clips");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2}\nmethod: {type: lora, rank: 2}\nsteps: 1\noutput: o\n",
        "'method.type' lora adapts the transformer only");
    assertRefused(
        "component: vae\ndata: {type: shapes, clips: 2}\ncaption_dropout: 0.1\nsteps: 1\noutput: o\n",
        "'caption_dropout' applies to component transformer only");
    assertRefused(
        "component: transformer\ndata: {type: prompts, prompts: [a red ball]}\nsteps: 1\noutput: o\n",
        "'data.type' 'prompts' is the data of method distill or nft");
    String distill = "component: transformer\nmethod: {type: distill}\nsteps: 1\noutput: o\n";
    assertRefused(
        distill + "data: {type: prompts, prompts: []}\n",
        "'data.prompts' must be a non-empty list");
    assertRefused(
        distill + "data: {type: prompts, prompts: [\"\"]}\n", "'data.prompts[0]' must be a prompt");
    assertRefused(
        distill + "data: {type: prompts, prompts: [a], shots: 2}\n", "'data.shots' unknown key");
    assertRefused(
        distill + "data: {type: prompts, prompts: [a]}\ncaption_dropout: 0.1\n",
        "'caption_dropout' does not apply to method distill");
    assertRefused(
        "component: vae\nmethod: {type: distill}\ndata: {type: prompts, prompts: [a]}\nsteps: 1\noutput: o\n",
        "'method.type' distill trains the transformer");
    String nft =
        "component: transformer\nmethod: {type: nft, reward: shapes}\nsteps: 4\noutput: o\n";
    String shapes = "prompts: [a red ball moving up on a gray background]";
    assertRefused(
        nft + "data: {type: prompts, " + shapes + ", samples_per_prompt: 1}\nbatch: 1\n",
        "'data.samples_per_prompt' is nft's group size K and must be ≥ 2, got 1");
    assertRefused(
        nft + "data: {type: prompts, " + shapes + "}\nbatch: 2\n",
        "'batch' nft takes one group a step: batch must equal data.samples_per_prompt 4, got 2");
    assertRefused(
        nft + "data: {type: prompts, " + shapes + "}\nbatch: 4\nmicro_batch: 2\n",
        "'micro_batch' nft evaluates each group member alone: must be 1");
    assertRefused(
        nft + "data: {type: prompts, prompts: [a red ball bouncing]}\nbatch: 4\n",
        "'data.prompts[0]' the shapes reward judges shapes captions only: not a shapes caption:"
            + " 'a red ball bouncing'");
    assertRefused(
        nft
            + "data: {type: prompts, "
            + shapes
            + "}\nbatch: 4\nevaluation: {prompts: [a cat], every: 2}\n",
        "'evaluation.prompts[0]' the shapes reward judges shapes captions only");
    assertRefused(
        nft + "data: {type: prompts, " + shapes + "}\nbatch: 4\nevaluation: {prompts: []}\n",
        "'evaluation.prompts' must be a non-empty list");
    assertRefused(
        nft + "data: {type: prompts, " + shapes + "}\nbatch: 4\nflow_shift: 3\n",
        "'flow_shift' does not apply to method nft");
    TrainConfig ok =
        TrainConfigReader.read(
            write(
                "nft.yaml",
                nft
                    + "data: {type: prompts, "
                    + shapes
                    + "}\nbatch: 4\nevaluation: {prompts: [a blue square moving left on a"
                    + " black background], seed: 9}\n"));
    assertEquals(
        new TrainConfig.Method.Nft(1.0, 8, "unipc", TrainConfig.Reward.SHAPES), ok.method());
    assertEquals(1, ok.microBatch());
    assertEquals(
        new TrainConfig.Evaluation(
            List.of("a blue square moving left on a black background"), 1, 9, 4),
        ok.evaluation());
    Files.writeString(tmp.resolve("notes.json"), "{\"hello\": 1}");
    assertRefused(
        "base: notes.json\ncomponent: transformer\ndata: {type: shapes, clips: 2}\nsteps: 1\noutput: o\n",
        "'base' is not a model card: ");
    assertRefused("- a list\n", "must be a mapping of keys to values");
    assertRefused("component: [unclosed\n", "not valid YAML");
  }

  @Test
  void refusesMalformedJson() throws Exception {
    TrainConfigException e =
        assertThrows(
            TrainConfigException.class,
            () -> TrainConfigReader.read(write("bad.json", "{\"component\": ")));
    assertTrue(e.getMessage().contains(": not valid JSON: "), e.getMessage());
  }

  private void assertRefused(String yaml, String expected) throws Exception {
    TrainConfigException e =
        assertThrows(
            TrainConfigException.class, () -> TrainConfigReader.read(write("bad.yaml", yaml)));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
    assertEquals(1, e.getMessage().lines().count(), e.getMessage());
  }

  private Path write(String name, String text) throws Exception {
    return Files.writeString(tmp.resolve(name), text);
  }
}
