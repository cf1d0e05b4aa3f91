package dev.stepweave.training.reward;

import dev.stepweave.training.data.RgbClip;

/**
 * A reward for a generated clip: how well a decoded clip shows what its prompt asked for. The
 * plug-in point of reward-driven post-training; the first implementation is the programmatic shapes
 * judge ({@link dev.stepweave.training.shapes.ShapesJudge}), a learned reward model would be
 * another.
 */
public interface ClipReward {
  /**
   * @return a score in {@code [0, 1]}, higher is better
   * @throws IllegalArgumentException when this reward cannot judge {@code prompt} (naming why)
   */
  double reward(RgbClip clip, String prompt);
}
