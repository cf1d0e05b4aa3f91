package dev.stepweave.training.rl;

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
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * What the RL tests on the tiny golden checkpoint share: the reward, the prompt and the held-out
 * measurement.
 *
 * <p>The reward is latent-space — how positive the final latents' first channel is, {@code ½ +
 * ½·tanh(4·mean)} — because the checkpoint's random VAE decodes nearly every latent to the same
 * colours (a redness reward varies by 0.003 across seeds there), while its DiT moves the latents
 * freely: the tests exercise the methods, not a VAE they cannot train.
 */
final class LatentReward {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  static final SampleReward POSITIVE_FIRST_CHANNEL =
      (sample, prompt) -> {
        Tensor first = sample.behavior().finalLatents().slice(1, 0, 1);
        float[] v = first.toFloatArray();
        double mean = 0;
        for (float f : v) {
          mean += f;
        }
        return 0.5 + 0.5 * Math.tanh(4 * mean / v.length);
      };

  /** The opposite preference: the control run of each method. */
  static final SampleReward NEGATIVE_FIRST_CHANNEL =
      (sample, prompt) -> 1 - POSITIVE_FIRST_CHANNEL.reward(sample, prompt);

  private LatentReward() {}

  /**
   * The tiny checkpoint served by an engine, and its transformer loaded again for training (its
   * weights file stays open while the policy computes with it): where every RL test starts.
   */
  record Served(WanModel model, Engine engine, TensorSource weights, TrainableTransformer policy)
      implements AutoCloseable {
    static Served open() {
      DiffusersDirectory.Component component =
          DiffusersDirectory.open(TINY).component("transformer");
      WanModel model = WanModel.load(TINY, new CpuBackend());
      Engine engine = new Engine(model);
      TensorSource weights = component.openWeights();
      return new Served(
          model,
          engine,
          weights,
          TrainableTransformer.load(
              WanTransformerConfig.fromJson(component.config()), weights, new CpuBackend()));
    }

    @Override
    public void close() {
      weights.close();
      engine.close();
      model.close();
    }
  }

  /** AdamW with torch's defaults at a constant rate, clipped at 1, no EMA. */
  static Optimiser.Settings adamAt(double learningRate) {
    return new Optimiser.Settings(
        new LearningRate.Constant(learningRate), AdamW.Settings.torchDefaults(), 1.0, Double.NaN);
  }

  static Request prompt(String id, long seed, String sampler) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                3, 1.0, seed, 32, 32, 5, 8, "", Optional.of(sampler), Optional.empty()))
        .id(id)
        .prompt("a red ball bouncing")
        .nodeOverrides(Map.of("text_encode", Map.of("max_sequence_length", "16")))
        .build();
  }

  /** The mean reward on four seeds no iteration rolls out. */
  static double heldOut(Engine engine, String tag, String sampler) throws Exception {
    double sum = 0;
    int n = 4;
    for (int i = 0; i < n; i++) {
      var r =
          engine
              .submit(
                  prompt(tag + i, 10_000 + i, sampler).toBuilder()
                      .output(OutputSpec.DEFAULT.capturing(BehaviorCapture.FINAL))
                      .build())
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
}
