package dev.stepweave.training.rl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.runtime.Engine;
import dev.stepweave.training.wan.TrainableTransformer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Flow-GRPO-style post-training end to end on the tiny checkpoint: SDE rollouts with their
 * log-probabilities through the serving engine, the clipped surrogate, weight sync. Every group's
 * first update is exactly on-policy (ρ = 1, rung C2), and the held-out reward moves the way the
 * reward asks.
 */
class GrpoTrainerTest {
  private static double[] run(SampleReward trainOn) throws Exception {
    try (LatentReward.Served served = LatentReward.Served.open()) {
      Engine engine = served.engine();
      TrainableTransformer policy = served.policy();
      GrpoTrainer trainer =
          new GrpoTrainer(
              engine,
              policy,
              trainOn,
              new GrpoTrainer.Settings(
                  4, 0.2, 2, LatentReward.adamAt(3e-3), Duration.ofMinutes(2)));
      double before = LatentReward.heldOut(engine, "before-", "sde");
      List<GrpoTrainer.Iteration> curve = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        curve.add(trainer.iterate(LatentReward.prompt("group-" + i, 0, "sde"), 100L * i));
      }
      double after = LatentReward.heldOut(engine, "after-", "sde");
      for (GrpoTrainer.Iteration it : curve) {
        System.out.printf(
            "grpo iteration %d: mean reward %.4f, first-update |ratio-1| %.1e, clipped %.2f, v%d%n",
            it.index(),
            it.meanReward(),
            it.firstUpdateRatioError(),
            it.clippedShare(),
            it.weightsVersion());
        assertEquals(0.0, it.firstUpdateRatioError(), "the first update is exactly on-policy");
      }
      System.out.printf("held-out reward: %.4f -> %.4f%n", before, after);
      assertEquals(6, curve.getLast().weightsVersion());
      return new double[] {before, after};
    }
  }

  @Test
  void theHeldOutRewardFollowsTheRewardAndTheFirstUpdateIsOnPolicy() throws Exception {
    double[] up = run(LatentReward.POSITIVE_FIRST_CHANNEL);
    assertTrue(up[1] > up[0] + 0.1, "held-out reward " + up[0] + " -> " + up[1]);
    double[] down = run(LatentReward.NEGATIVE_FIRST_CHANNEL);
    assertEquals(up[0], down[0], 0.0, "both start from the same model");
    assertTrue(down[1] < down[0] - 0.1, "held-out reward " + down[0] + " -> " + down[1]);
  }

  @Test
  void aDeterministicSamplerIsRefused() {
    try (LatentReward.Served served = LatentReward.Served.open()) {
      Engine engine = served.engine();
      TrainableTransformer policy = served.policy();
      GrpoTrainer trainer =
          new GrpoTrainer(
              engine,
              policy,
              LatentReward.POSITIVE_FIRST_CHANNEL,
              new GrpoTrainer.Settings(
                  2, 0.2, 1, LatentReward.adamAt(1e-3), Duration.ofMinutes(1)));
      var e =
          assertThrows(
              IllegalArgumentException.class,
              () -> trainer.iterate(LatentReward.prompt("euler", 0, "euler"), 0));
      assertEquals(
          "GRPO needs per-step log-probabilities: the rollout sampler must be sde", e.getMessage());
    }
  }
}
