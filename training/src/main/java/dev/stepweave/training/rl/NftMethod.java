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
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The three moves of DiffusionNFT-style post-training on the serving engine, without an optimiser
 * of its own, so that {@link NftTrainer} (a library loop) and {@code stepweave train}'s run (its
 * own optimiser, checkpoints and logs) drive the same method:
 *
 * <ol>
 *   <li>{@link #rollOut}: a K-wide group of one prompt through the engine that serves ({@link
 *       GroupRollout}, final latents captured), each decoded sample scored by the reward plug-in,
 *       the rewards turned into group-relative optimality;
 *   <li>{@link #evaluate}: one member's {@link NftObjective} at a given noise level and noise, with
 *       the old policy — the one that rolled out — evaluated before the update;
 *   <li>{@link #publish}: the updated policy synced into the engine, so the next group rolls out
 *       under it.
 * </ol>
 */
public final class NftMethod {
  /**
   * @param groupSize K, samples per prompt
   * @param beta the implicit policies' strength β
   * @param timeout how long one group's rollouts (or one sync) may take
   */
  public record Settings(int groupSize, double beta, Duration timeout) {
    public Settings {
      if (groupSize < 2) {
        throw new IllegalArgumentException(
            "a group-relative method needs at least 2 samples per group, got " + groupSize);
      }
      if (!(beta > 0)) {
        throw new IllegalArgumentException("NFT needs beta > 0, got " + beta);
      }
    }
  }

  /** A rolled-out group with each member's reward and optimality. */
  public record ScoredGroup(
      List<GroupRollout.Sample> samples, double[] rewards, double[] optimality) {
    public ScoredGroup {
      samples = List.copyOf(samples);
      rewards = rewards.clone();
      optimality = optimality.clone();
    }

    public double meanReward() {
      return Arrays.stream(rewards).average().orElse(0);
    }
  }

  private final Engine engine;
  private final TrainableTransformer policy;
  private final Map<String, Tensor> trainable;
  private final SampleReward reward;
  private final Settings settings;

  /**
   * @param engine the serving engine whose model's transformer weights equal {@code policy}'s
   */
  public NftMethod(
      Engine engine, TrainableTransformer policy, SampleReward reward, Settings settings) {
    this.engine = engine;
    this.policy = policy;
    this.trainable = policy.parameters();
    this.reward = reward;
    this.settings = settings;
  }

  /** The policy's parameters: what the optimiser updates and {@link #publish} syncs. */
  public Map<String, Tensor> trainable() {
    return trainable;
  }

  /**
   * Rolls out a group of {@code prompt} (its guidance must be ≤ 1: the method trains a CFG-free
   * policy), seeds from {@code firstSeed}, and scores it.
   */
  public ScoredGroup rollOut(Request prompt, long firstSeed) {
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
    return new ScoredGroup(group, rewards, NftObjective.optimality(rewards));
  }

  /**
   * Member {@code member}'s objective and gradients: its final latents noised at {@code sigma} with
   * the noise of {@code noiseSeed}. Callers give every member of a group the same noise level and
   * noise (common random numbers): the optimality weights' deviations from ½ sum to about zero over
   * a group, so the noise's part of the members' targets {@code ε − x₀} cancels in the step and the
   * gradient keeps the difference between good and bad samples, which independent noise per member
   * buries.
   *
   * @param share the member's share of the optimiser step
   */
  public Optimiser.Evaluation evaluate(
      ScoredGroup group, int member, float sigma, long noiseSeed, double share) {
    BehaviorRecord b = group.samples().get(member).behavior();
    Tensor x0 = b.finalLatents();
    Tensor context = b.conditioning().get(BehaviorRecord.PROMPT_EMBEDS);
    Backend ops = policy.backend();
    FlowMatching.Noised n =
        FlowMatching.noised(
            ops,
            new FlowMatching.Batch(
                x0,
                TorchGenerator.seeded(noiseSeed & Long.MAX_VALUE).randn(x0.shape()),
                Tensor.of(new float[] {sigma}, 1),
                context));
    // Evaluation mode, before this step's update: the policy that rolled out.
    Tensor old = policy.model().forward(n.xt(), n.timestep(), context, TapSink.NONE);
    double r = group.optimality()[member];
    var e =
        policy.lossAndGradientsAt(
            n.xt(),
            n.timestep(),
            context,
            trainable,
            AdapterRows.NONE,
            v -> NftObjective.loss(ops, v, old, n.target(), settings.beta(), r));
    return new Optimiser.Evaluation(share, e.loss(), e.gradients());
  }

  /** Syncs the policy's current weights into the engine; returns the new weights version. */
  public long publish() {
    return GroupRollout.publish(engine, trainable, settings.timeout());
  }
}
