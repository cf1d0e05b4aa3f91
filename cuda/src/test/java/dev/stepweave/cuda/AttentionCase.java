package dev.stepweave.cuda;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;

/**
 * One attention shape of the GPU attention tests: random [B, L, H, D] host queries, keys and values
 * (fixed seeds) and the usual 1/√D scale.
 */
record AttentionCase(int b, int lq, int lk, int h, int d) {
  Tensor q() {
    return RandomWeights.uniform(1, 2f, b, lq, h, d);
  }

  Tensor k() {
    return RandomWeights.uniform(2, 2f, b, lk, h, d);
  }

  Tensor v() {
    return RandomWeights.uniform(3, 1f, b, lk, h, d);
  }

  float scale() {
    return (float) (1 / Math.sqrt(d));
  }

  @Override
  public String toString() {
    return "b" + b + " lq" + lq + " lk" + lk + " h" + h + " d" + d;
  }
}
