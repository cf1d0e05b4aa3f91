package dev.stepweave.training.rl;

import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.reward.ClipReward;

/**
 * The reward an RL method scores a rollout sample with, in [0, 1]. Most rewards judge the decoded
 * clip ({@link #ofClips}, e.g. the shapes judge); one may also read the sample's behaviour record
 * (its final latents), as a latent-space reward model would.
 */
@FunctionalInterface
public interface SampleReward {
  double reward(GroupRollout.Sample sample, String prompt);

  /** A clip reward on the sample's decoded video. */
  static SampleReward ofClips(ClipReward clips) {
    return (sample, prompt) -> clips.reward(RgbClip.fromFrames(sample.video().frames()), prompt);
  }
}
