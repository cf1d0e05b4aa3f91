package dev.stepweave.training.rl;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.rng.TorchGenerator;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableTransformer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Online DiffusionNFT-style post-training on the serving engine. One iteration: a K-wide group of
 * one prompt is rolled out by the engine that serves ({@link GroupRollout}, final latents
 * captured), the reward plug-in scores each decoded clip, group-relative optimality weights the
 * {@link NftObjective} at one random noise level per sample, one AdamW step updates the policy, and
 * {@link Engine#syncWeights} publishes it, so the next group rolls out under the new weights. The
 * old policy of the objective is the one that rolled out: the trainer's own weights before the
 * step, which are the engine's until the sync.
 */
public final class NftTrainer {
  /**
   * @param groupSize K, samples per prompt
   * @param beta the implicit policies' strength β
   * @param optimiser the learning-rate schedule (by iteration), AdamW, clipping and EMA
   * @param timeout how long one group's rollouts may take
   */
  public record Settings(
      int groupSize, double beta, Optimiser.Settings optimiser, Duration timeout) {
    public Settings {
      if (groupSize < 2) {
        throw new IllegalArgumentException(
            "a group-relative method needs at least 2 samples per group, got " + groupSize);
      }
    }
  }

  /** What one iteration did. */
  public record Iteration(int index, double meanReward, double loss, long weightsVersion) {}

  private final Engine engine;
  private final TrainableTransformer policy;
  private final Map<String, Tensor> trainable;
  private final SampleReward reward;
  private final Settings settings;
  private final Optimiser optimiser;
  private final SplittableRandom noise;
  private int iterations;

  /**
   * @param engine the serving engine whose model's transformer weights equal {@code policy}'s
   * @param seed the seed of the training forward's noise levels and noise
   */
  public NftTrainer(
      Engine engine,
      TrainableTransformer policy,
      SampleReward reward,
      Settings settings,
      long seed) {
    this.engine = engine;
    this.policy = policy;
    this.trainable = policy.parameters();
    this.reward = reward;
    this.settings = settings;
    this.optimiser = new Optimiser(settings.optimiser(), trainable);
    this.noise = new SplittableRandom(seed);
  }

  /**
   * One iteration on {@code prompt} (its guidance must be ≤ 1: the method trains a CFG-free
   * policy), the group's seeds starting at {@code firstSeed}.
   */
  public Iteration iterate(Request prompt, long firstSeed) {
    if (prompt.params().guidance() > 1) {
      throw new IllegalArgumentException(
          "NFT trains a CFG-free policy: guidance must be <= 1, got " + prompt.params().guidance());
    }
    int k = settings.groupSize();
    List<GroupRollout.Sample> group =
        GroupRollout.run(engine, prompt, k, firstSeed, BehaviorCapture.FINAL, settings.timeout());
    double[] rewards = new double[k];
    for (int i = 0; i < k; i++) {
      rewards[i] = reward.reward(group.get(i), prompt.prompt());
    }
    double[] optimality = NftObjective.optimality(rewards);
    Backend ops = policy.backend();
    Optimiser.Step step =
        optimiser.step(
            trainable,
            k,
            i -> {
              BehaviorRecord b = group.get(i).behavior();
              Tensor x0 = b.finalLatents();
              Tensor context = b.conditioning().get(BehaviorRecord.PROMPT_EMBEDS);
              float sigma = (float) noise.nextDouble();
              FlowMatching.Noised n =
                  FlowMatching.noised(
                      ops,
                      new FlowMatching.Batch(
                          x0,
                          TorchGenerator.seeded(noise.nextLong() & Long.MAX_VALUE)
                              .randn(x0.shape()),
                          Tensor.of(new float[] {sigma}, 1),
                          context));
              // Evaluation mode, before this iteration's step: the policy that rolled out.
              Tensor old = policy.model().forward(n.xt(), n.timestep(), context, TapSink.NONE);
              double r = optimality[i];
              var e =
                  policy.lossAndGradientsAt(
                      n.xt(),
                      n.timestep(),
                      context,
                      trainable,
                      AdapterRows.NONE,
                      v -> NftObjective.loss(ops, v, old, n.target(), settings.beta(), r));
              return new Optimiser.Evaluation(1.0 / k, e.loss(), e.gradients());
            });
    long version = GroupRollout.publish(engine, trainable, settings.timeout());
    double mean = java.util.Arrays.stream(rewards).average().orElse(0);
    return new Iteration(iterations++, mean, step.loss(), version);
  }
}
