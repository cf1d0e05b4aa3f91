package dev.stepweave.training.run;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.reward.ClipReward;
import dev.stepweave.training.rl.GroupRollout;
import dev.stepweave.training.rl.NftMethod;
import dev.stepweave.training.rl.SampleReward;
import dev.stepweave.training.shapes.ShapeCaption;
import dev.stepweave.training.shapes.ShapesJudge;
import dev.stepweave.training.wan.TrainableTransformer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The transformer under DiffusionNFT-style post-training ({@link NftMethod}): the run's base served
 * by an engine of its own, which rolls out each step's group — a prompt chosen by the run's data
 * order, K seeds that are a function of the step — under the current policy; each sample of the
 * step is a group member, all noised at the one noise level and with the one noise the step draws;
 * after each optimiser step the policy is published into the engine. Everything is a function of
 * (seed, step) and the weights, so a resumed run rolls out what the uninterrupted one did.
 */
final class NftComponent implements TrainedComponent {
  /** How long one group's rollouts, one held-out sample or one weight sync may take. */
  private static final Duration TIMEOUT = Duration.ofMinutes(30);

  private final WanModel served;
  private final Engine engine;
  private final NftMethod method;
  private final ClipReward reward;
  private final TrainConfig.Data.Prompts prompts;
  private final TrainConfig.Method.Nft nft;
  private final DataOrder promptOrder;
  private final long seed;
  private final Backend backend;
  private NftMethod.ScoredGroup group;
  private float sigma;
  private long noiseSeed;

  private NftComponent(
      WanModel served,
      TrainableTransformer policy,
      ClipReward reward,
      TrainConfig.Data.Prompts prompts,
      TrainConfig.Method.Nft nft,
      long seed) {
    this.served = served;
    this.engine = new Engine(served);
    this.reward = reward;
    this.prompts = prompts;
    this.nft = nft;
    this.method =
        new NftMethod(
            engine,
            policy,
            SampleReward.ofClips(reward),
            new NftMethod.Settings(prompts.samplesPerPrompt(), nft.beta(), TIMEOUT));
    this.promptOrder = new DataOrder(seed, prompts.prompts().size());
    this.seed = seed;
    this.backend = policy.backend();
  }

  /** Serves {@code base} on the CPU for the rollouts of {@code policy}, its transformer. */
  static NftComponent open(
      Path base,
      TrainableTransformer policy,
      TrainConfig.Data.Prompts prompts,
      TrainConfig.Method.Nft nft,
      long seed) {
    ShapesJudge judge = new ShapesJudge();
    ClipReward reward =
        switch (nft.reward()) {
          case SHAPES -> judge;
          case SHAPES_COLOR ->
              (clip, prompt) -> judge.colorNearness(clip, ShapeCaption.parse(prompt).color());
        };
    return new NftComponent(
        WanModel.load(base, new CpuBackend()), policy, reward, prompts, nft, seed);
  }

  @Override
  public Map<String, Tensor> trainable() {
    return method.trainable();
  }

  @Override
  public Backend backend() {
    return backend;
  }

  @Override
  public void beforeStep(int step) {
    int k = prompts.samplesPerPrompt();
    String prompt = prompts.prompts().get(promptOrder.sampleAt(step));
    group = method.rollOut(request("rollout-" + step, prompt, 0), prompts.seed() + (long) step * k);
    // One noise level and one noise for the whole group (common random numbers,
    // NftMethod#evaluate).
    StepDraws draws = new StepDraws(seed, step);
    sigma = (float) draws.uniform();
    noiseSeed = draws.bits();
  }

  @Override
  public Optimiser.Evaluation evaluate(List<Integer> samples, StepDraws draws, double share) {
    if (samples.size() != 1) {
      throw new IllegalStateException("nft evaluates one group member at a time");
    }
    return method.evaluate(group, samples.getFirst(), sigma, noiseSeed, share);
  }

  @Override
  public void stepped() {
    method.publish();
  }

  @Override
  public double reward() {
    return group == null ? Double.NaN : group.meanReward();
  }

  /**
   * The served policy's mean reward on {@code evaluation}'s prompts at the rollouts' settings, each
   * prompt's samples one group ({@link GroupRollout}): sample j of prompt i has seed {@code seed +
   * i·samplesPerPrompt + j}.
   */
  double heldOutReward(TrainConfig.Evaluation evaluation) {
    List<String> held = evaluation.prompts();
    int n = evaluation.samplesPerPrompt();
    double sum = 0;
    for (int i = 0; i < held.size(); i++) {
      for (GroupRollout.Sample sample :
          GroupRollout.run(
              engine,
              request("heldout-" + i, held.get(i), 0),
              n,
              evaluation.seed() + (long) i * n,
              BehaviorCapture.FINAL,
              TIMEOUT)) {
        sum += reward.reward(RgbClip.fromFrames(sample.video().frames()), held.get(i));
      }
    }
    return sum / (held.size() * n);
  }

  /** A CFG-free request at the rollouts' settings. */
  private Request request(String id, String prompt, long seed) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                nft.samplingSteps(),
                1.0,
                seed,
                prompts.width(),
                prompts.height(),
                prompts.frames(),
                8,
                "",
                Optional.of(nft.sampler()),
                Optional.empty()))
        .id(id)
        .prompt(prompt)
        .build();
  }

  @Override
  public void close() {
    engine.close();
    served.close();
  }
}
