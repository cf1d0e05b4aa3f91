package dev.stepweave.training.rl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.LearningRate;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableTransformer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * DiffusionNFT-style post-training end to end on the tiny checkpoint: rollouts through the serving
 * engine, a programmatic reward (how red the clip is), the NFT step, weight sync — and the reward
 * on held-out seeds, never trained on, goes up.
 */
class NftTrainerTest {
  private static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  /**
   * How positive the final latents' first channel is: {@code ½ + ½·tanh(4·mean)}. A latent-space
   * reward, because the tiny golden checkpoint's random VAE decodes nearly every latent to the same
   * colours (a clip reward such as redness varies by 0.003 across seeds there), while its DiT moves
   * the latents freely: the test exercises the method, not a VAE it cannot train.
   */
  static final SampleReward POSITIVE_FIRST_CHANNEL =
      (sample, prompt) -> {
        Tensor x = sample.behavior().finalLatents();
        Tensor first = x.slice(1, 0, 1);
        float[] v = first.toFloatArray();
        double mean = 0;
        for (float f : v) {
          mean += f;
        }
        return 0.5 + 0.5 * Math.tanh(4 * mean / v.length);
      };

  static Request prompt(String id, long seed) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                3, 1.0, seed, 32, 32, 5, 8, "", Optional.of("euler"), Optional.empty()))
        .id(id)
        .prompt("a red ball bouncing")
        .nodeOverrides(Map.of("text_encode", Map.of("max_sequence_length", "16")))
        .build();
  }

  private static double heldOutReward(Engine engine, String tag) throws Exception {
    double sum = 0;
    int n = 4;
    for (int i = 0; i < n; i++) {
      var r =
          engine
              .submit(prompt(tag + i, 10_000 + i).toBuilder().output(CAPTURE).build())
              .result()
              .get(120, TimeUnit.SECONDS);
      sum +=
          POSITIVE_FIRST_CHANNEL.reward(
              new GroupRollout.Sample(
                  10_000 + i,
                  r.artifact(Artifact.VideoArtifact.class),
                  r.artifact(Artifact.BehaviorArtifact.class).record()),
              "");
    }
    return sum / n;
  }

  private static final OutputSpec CAPTURE = OutputSpec.DEFAULT.capturing(BehaviorCapture.FINAL);

  /**
   * Trains eight iterations with {@code trainOn} and returns the held-out {@link
   * #POSITIVE_FIRST_CHANNEL} reward before and after.
   */
  private static double[] run(SampleReward trainOn) throws Exception {
    DiffusersDirectory.Component component = DiffusersDirectory.open(TINY).component("transformer");
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model);
        TensorSource weights = component.openWeights()) {
      TrainableTransformer policy =
          TrainableTransformer.load(
              WanTransformerConfig.fromJson(component.config()), weights, new CpuBackend());
      NftTrainer trainer =
          new NftTrainer(
              engine,
              policy,
              trainOn,
              new NftTrainer.Settings(
                  4,
                  1.0,
                  new Optimiser.Settings(
                      new LearningRate.Constant(3e-3),
                      AdamW.Settings.torchDefaults(),
                      1.0,
                      Double.NaN),
                  Duration.ofMinutes(2)),
              7);
      double before = heldOutReward(engine, "before-");
      List<NftTrainer.Iteration> curve = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        curve.add(trainer.iterate(prompt("group-" + i, 0), 100L * i));
      }
      double after = heldOutReward(engine, "after-");
      curve.forEach(
          it ->
              System.out.printf(
                  "nft iteration %d: mean reward %.4f, loss %.5f, weights v%d%n",
                  it.index(), it.meanReward(), it.loss(), it.weightsVersion()));
      System.out.printf("held-out reward: %.4f -> %.4f%n", before, after);
      assertEquals(8, curve.getLast().weightsVersion(), "one sync per iteration");
      return new double[] {before, after};
    }
  }

  @Test
  void theHeldOutRewardRisesUnderNftAndFallsWhenTheRewardIsReversed() throws Exception {
    double[] up = run(POSITIVE_FIRST_CHANNEL);
    assertTrue(up[1] > up[0] + 0.1, "held-out reward " + up[0] + " -> " + up[1]);
    // The control: the same run rewarding the opposite moves the other way, so the direction
    // comes from the reward, not from any update.
    double[] down = run((sample, prompt) -> 1 - POSITIVE_FIRST_CHANNEL.reward(sample, prompt));
    assertEquals(up[0], down[0], 0.0, "both start from the same model");
    assertTrue(down[1] < down[0] - 0.1, "held-out reward " + down[0] + " -> " + down[1]);
  }

  @Test
  void guidanceIsRefused() {
    DiffusersDirectory.Component component = DiffusersDirectory.open(TINY).component("transformer");
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model);
        TensorSource weights = component.openWeights()) {
      TrainableTransformer policy =
          TrainableTransformer.load(
              WanTransformerConfig.fromJson(component.config()), weights, new CpuBackend());
      NftTrainer trainer =
          new NftTrainer(
              engine,
              policy,
              POSITIVE_FIRST_CHANNEL,
              new NftTrainer.Settings(
                  2,
                  1.0,
                  new Optimiser.Settings(
                      new LearningRate.Constant(1e-3),
                      AdamW.Settings.torchDefaults(),
                      1.0,
                      Double.NaN),
                  Duration.ofMinutes(1)),
              1);
      Request cfg = prompt("cfg", 0).toBuilder().build();
      Request guided =
          new Request(
              "cfg",
              cfg.task(),
              cfg.inputs(),
              new DiffusionParams(3, 5.0, 0, 32, 32, 5, 8, "", Optional.empty(), Optional.empty()),
              cfg.output(),
              cfg.nodeOverrides(),
              false,
              Map.of(),
              false,
              List.of());
      var e = assertThrows(IllegalArgumentException.class, () -> trainer.iterate(guided, 0));
      assertEquals("NFT trains a CFG-free policy: guidance must be <= 1, got 5.0", e.getMessage());
    }
  }
}
