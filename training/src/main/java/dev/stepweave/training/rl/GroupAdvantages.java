package dev.stepweave.training.rl;

/** Group-relative advantages, the normalisation GRPO- and NFT-style methods share. */
public final class GroupAdvantages {
  private GroupAdvantages() {}

  /**
   * {@code (R − mean) / std} over one group (population std), all 0 for a group whose rewards are
   * equal: such a group carries no preference to learn from.
   */
  public static double[] standardised(double[] rewards) {
    double mean = 0;
    for (double r : rewards) {
      mean += r;
    }
    mean /= rewards.length;
    double var = 0;
    for (double r : rewards) {
      var += (r - mean) * (r - mean);
    }
    double std = Math.sqrt(var / rewards.length);
    double[] out = new double[rewards.length];
    for (int i = 0; i < rewards.length; i++) {
      out[i] = std < 1e-12 ? 0 : (rewards[i] - mean) / std;
    }
    return out;
  }
}
