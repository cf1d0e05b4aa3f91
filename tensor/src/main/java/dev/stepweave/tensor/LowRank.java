package dev.stepweave.tensor;

import java.util.Objects;

/**
 * One low-rank update of a linear layer, {@code scale · up · (down · x)}: a LoRA adapter's factors
 * for one layer at one strength. The factors are the adapter's own tensors; the layer's weight is
 * never touched.
 *
 * @param down {@code [r, in]} (LoRA's A)
 * @param up {@code [out, r]} (LoRA's B)
 * @param scale the strength times whatever the format folds in (alpha / rank)
 */
public record LowRank(Tensor down, Tensor up, float scale) {
  public LowRank {
    Objects.requireNonNull(down, "down");
    Objects.requireNonNull(up, "up");
    if (down.rank() != 2 || up.rank() != 2 || up.dim(1) != down.dim(0)) {
      throw new IllegalArgumentException(
          "low-rank factors must be down [r, in] and up [out, r], got down "
              + java.util.Arrays.toString(down.shape())
              + " and up "
              + java.util.Arrays.toString(up.shape()));
    }
    if (!Float.isFinite(scale)) {
      throw new IllegalArgumentException("low-rank scale must be finite, got " + scale);
    }
  }

  public int rank() {
    return down.dim(0);
  }

  public int in() {
    return down.dim(1);
  }

  public int out() {
    return up.dim(0);
  }
}
