package dev.stepweave.training.rl;

import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableTransformer;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * Online DiffusionNFT-style post-training on the serving engine as a library loop: each {@link
 * #iterate} is one {@link NftMethod} round — a group rolled out and scored, one AdamW step over its
 * members as micro-batches (all at one random noise level with one noise), the policy published —
 * so the next group rolls out under the new weights. {@code stepweave train} runs the same method
 * with its own checkpoints and logs (method {@code nft}).
 */
public final class NftTrainer {
  /**
   * @param groupSize K, samples per prompt
   * @param beta the implicit policies' strength β
   * @param optimiser the learning-rate schedule (by iteration), AdamW, clipping and EMA
   * @param timeout how long one group's rollouts may take
   */
  public record Settings(
      int groupSize, double beta, Optimiser.Settings optimiser, Duration timeout) {}

  /** What one iteration did. */
  public record Iteration(int index, double meanReward, double loss, long weightsVersion) {}

  private final NftMethod method;
  private final int groupSize;
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
    this.method =
        new NftMethod(
            engine,
            policy,
            reward,
            new NftMethod.Settings(settings.groupSize(), settings.beta(), settings.timeout()));
    this.groupSize = settings.groupSize();
    this.optimiser = new Optimiser(settings.optimiser(), method.trainable());
    this.noise = new SplittableRandom(seed);
  }

  /**
   * One iteration on {@code prompt} (its guidance must be ≤ 1: the method trains a CFG-free
   * policy), the group's seeds starting at {@code firstSeed}.
   */
  public Iteration iterate(Request prompt, long firstSeed) {
    NftMethod.ScoredGroup group = method.rollOut(prompt, firstSeed);
    // One noise level and noise for the group: common random numbers (NftMethod#evaluate).
    float sigma = (float) noise.nextDouble();
    long noiseSeed = noise.nextLong();
    Optimiser.Step step =
        optimiser.step(
            method.trainable(),
            groupSize,
            i -> method.evaluate(group, i, sigma, noiseSeed, 1.0 / groupSize));
    long version = method.publish();
    return new Iteration(iterations++, group.meanReward(), step.loss(), version);
  }
}
