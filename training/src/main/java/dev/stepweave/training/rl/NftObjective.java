package dev.stepweave.training.rl;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.objective.FlowMatching;

/**
 * The likelihood-free objective of DiffusionNFT-style post-training: no log-probabilities, only
 * seeded final samples and predictions. A rollout's clean latents x₀ with optimality r ∈ [0, 1] are
 * noised as in flow matching; with the old policy's velocity v_old (the policy that rolled out) and
 * the trained one's v, the implicit positive and negative policies are
 *
 * <pre>
 *   v⁺ = (1 − β)·v_old + β·v        v⁻ = (1 + β)·v_old − β·v
 *   L  = r·‖v⁺ − (ε − x₀)‖² + (1 − r)·‖v⁻ − (ε − x₀)‖²      (means over elements)
 * </pre>
 *
 * so a good sample pulls the positive policy onto its flow and a bad one pushes the negative policy
 * onto it, which moves v away from it.
 */
public final class NftObjective {
  private NftObjective() {}

  /**
   * The loss of one sample, from backend operations (differentiable on a recording backend).
   *
   * @param policy v, the trained policy's velocity
   * @param old v_old, the rollout policy's velocity (a constant)
   * @param target the flow-matching target ε − x₀
   * @param beta the guidance strength β > 0 of the implicit policies
   * @param optimality r ∈ [0, 1]
   */
  public static Tensor loss(
      Backend ops, Tensor policy, Tensor old, Tensor target, double beta, double optimality) {
    if (!(beta > 0) || !(optimality >= 0 && optimality <= 1)) {
      throw new IllegalArgumentException(
          "NFT needs beta > 0 and optimality in [0, 1], got " + beta + " and " + optimality);
    }
    Tensor positive =
        ops.add(ops.affine(old, (float) (1 - beta), 0f), ops.affine(policy, (float) beta, 0f));
    Tensor negative =
        ops.sub(ops.affine(old, (float) (1 + beta), 0f), ops.affine(policy, (float) beta, 0f));
    Tensor pull = FlowMatching.meanSquaredError(ops, positive, target);
    Tensor push = FlowMatching.meanSquaredError(ops, negative, target);
    return ops.add(
        ops.affine(pull, (float) optimality, 0f), ops.affine(push, (float) (1 - optimality), 0f));
  }

  /**
   * Optimality from a group's rewards: {@code r = ½ + ½·clip((R − mean) / std, −1, 1)}, so the
   * group's average sample is neutral (½) and a group whose rewards are all equal teaches nothing.
   */
  public static double[] optimality(double[] rewards) {
    double[] a = GroupAdvantages.standardised(rewards);
    double[] out = new double[a.length];
    for (int i = 0; i < a.length; i++) {
      out[i] = 0.5 + 0.5 * Math.max(-1, Math.min(1, a[i]));
    }
    return out;
  }
}
