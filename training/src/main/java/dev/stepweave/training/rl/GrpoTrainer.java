package dev.stepweave.training.rl;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.sampling.FlowSde;
import dev.stepweave.models.sampling.GaussianStep;
import dev.stepweave.models.sampling.SamplerSchedule;
import dev.stepweave.models.sampling.SamplerState;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableTransformer;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Online Flow-GRPO-style post-training on the serving engine, the log-probability method. One
 * iteration: a K-wide group is rolled out with the stochastic sampler ({@code sampler: "sde"}) and
 * TRAJECTORY capture, so every step's latents and log-probability under the rollout policy are
 * recorded; group-relative advantages {@code A = (R − mean)/std}; then {@code updates} optimiser
 * steps of the clipped surrogate {@code −min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A)} over every (sample,
 * step), with {@code ρ = exp(log p_θ − log p_old)}; then a weight sync.
 *
 * <p>The first update of a group is exactly on-policy: the train forward reproduces the recorded
 * log-probabilities bit for bit (rung C2, {@code RolloutLogProbIdentityTest}), so ρ = 1 there with
 * no correction. The surrogate's gradient is {@code −A·ρ·∇log p_θ} where the clip does not bind and
 * 0 where it does; the trainer evaluates ρ first (evaluation mode), then records {@code c·log p_θ}
 * with that constant c.
 */
public final class GrpoTrainer {
  /**
   * @param groupSize K, samples per prompt
   * @param clipRange ε of the ratio clip
   * @param updates optimiser steps per group (the later ones are off-policy, ρ ≠ 1)
   * @param timeout how long one group's rollouts may take
   */
  public record Settings(
      int groupSize,
      double clipRange,
      int updates,
      Optimiser.Settings optimiser,
      Duration timeout) {
    public Settings {
      if (groupSize < 2 || updates < 1 || !(clipRange > 0)) {
        throw new IllegalArgumentException(
            "GRPO needs groupSize >= 2, updates >= 1 and clipRange > 0, got "
                + groupSize
                + ", "
                + updates
                + ", "
                + clipRange);
      }
    }
  }

  /**
   * What one iteration did.
   *
   * @param firstUpdateRatioError the largest |ρ − 1| in the group's first update (0 when the train
   *     forward reproduces the rollout's log-probabilities exactly)
   * @param clippedShare the share of (sample, step) terms whose clip bound, over all updates
   */
  public record Iteration(
      int index,
      double meanReward,
      double firstUpdateRatioError,
      double clippedShare,
      long weightsVersion) {}

  private final Engine engine;
  private final TrainableTransformer policy;
  private final Map<String, Tensor> trainable;
  private final SampleReward reward;
  private final Settings settings;
  private final Optimiser optimiser;
  private int iterations;

  /** {@code engine}'s model must serve {@code policy}'s transformer weights. */
  public GrpoTrainer(
      Engine engine, TrainableTransformer policy, SampleReward reward, Settings settings) {
    this.engine = engine;
    this.policy = policy;
    this.trainable = policy.parameters();
    this.reward = reward;
    this.settings = settings;
    this.optimiser = new Optimiser(settings.optimiser(), trainable);
  }

  /**
   * One iteration on {@code prompt} (sampler "sde", guidance ≤ 1), seeds from {@code firstSeed}.
   */
  public Iteration iterate(Request prompt, long firstSeed) {
    if (!prompt.params().sampler().equals(java.util.Optional.of("sde"))) {
      throw new IllegalArgumentException(
          "GRPO needs per-step log-probabilities: the rollout sampler must be sde");
    }
    if (prompt.params().guidance() > 1) {
      throw new IllegalArgumentException(
          "this GRPO trains a CFG-free policy: guidance must be <= 1, got "
              + prompt.params().guidance());
    }
    int k = settings.groupSize();
    List<GroupRollout.Sample> group =
        GroupRollout.run(
            engine, prompt, k, firstSeed, BehaviorCapture.TRAJECTORY, settings.timeout());
    double[] rewards = new double[k];
    for (int i = 0; i < k; i++) {
      rewards[i] = reward.reward(group.get(i), prompt.prompt());
    }
    double[] advantages = GroupAdvantages.standardised(rewards);
    BehaviorRecord first = group.getFirst().behavior();
    int steps = first.steps();
    FlowSde sampler =
        new FlowSde(1000, 1.0, Double.parseDouble(first.assumptions().get("noise_level")));
    SamplerSchedule schedule = new SamplerSchedule(first.timesteps(), first.sigmas());
    Backend ops = policy.backend();
    double firstError = 0;
    long clipped = 0;
    for (int u = 0; u < settings.updates(); u++) {
      double[] ratioError = {0};
      long[] clippedNow = {0};
      optimiser.step(
          trainable,
          k * steps,
          m -> {
            int i = m / steps;
            int j = m % steps;
            BehaviorRecord b = group.get(i).behavior();
            Tensor x = b.latentsBefore(j);
            Tensor next = b.latentsBefore(j + 1);
            Tensor t = Tensor.of(new float[] {b.timesteps()[j]}, 1);
            Tensor context = b.conditioning().get(BehaviorRecord.PROMPT_EMBEDS);
            SamplerState state = new SamplerState(schedule, j, List.of(), null, 0, 0, 0);
            Tensor v = policy.model().forward(x, t, context, TapSink.NONE);
            double ratio =
                Math.exp(
                    sampler.transition(ops, state, v, x).meanLogProb(ops, next) - b.logProbs()[j]);
            ratioError[0] = Math.max(ratioError[0], Math.abs(ratio - 1));
            double a = advantages[i];
            double bounded =
                Math.max(1 - settings.clipRange(), Math.min(1 + settings.clipRange(), ratio));
            boolean binds = bounded * a < ratio * a;
            double objective = Math.min(ratio * a, bounded * a);
            // d(−objective)/d log p: −A·ρ where the unclipped term is the minimum, 0 where the clip
            // binds.
            float coefficient = binds ? 0f : (float) (-a * ratio);
            if (binds) {
              clippedNow[0]++;
            }
            var e =
                policy.lossAndGradientsAt(
                    x,
                    t,
                    context,
                    trainable,
                    AdapterRows.NONE,
                    prediction -> {
                      GaussianStep g = sampler.transition(ops, state, prediction, x);
                      return ops.affine(g.meanLogProbTensor(ops, next), coefficient, 0f);
                    });
            return new Optimiser.Evaluation(1.0 / (k * steps), -objective, e.gradients());
          });
      if (u == 0) {
        firstError = ratioError[0];
      }
      clipped += clippedNow[0];
    }
    long version = GroupRollout.publish(engine, trainable, settings.timeout());
    double mean = java.util.Arrays.stream(rewards).average().orElse(0);
    return new Iteration(
        iterations++,
        mean,
        firstError,
        (double) clipped / ((long) settings.updates() * k * steps),
        version);
  }
}
