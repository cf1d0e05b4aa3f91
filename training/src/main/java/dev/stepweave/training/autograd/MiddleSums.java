package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * Sums over the middle dimension of a tensor viewed as {@code [outer, rows, inner]} ({@link
 * Backend#sumMiddle}): a bias's gradient (the rows of a linear's output gradient), a broadcast
 * operand's (the tokens of a modulation's).
 */
final class MiddleSums {
  private MiddleSums() {}

  /** {@code g} (contiguous or not) summed over its middle dimension: {@code [outer, inner]}. */
  static Tensor of(Backend b, Tensor g, int outer, int rows, int inner) {
    return b.sumMiddle((g.isContiguous() ? g : b.contiguous(g)).reshape(outer, rows, inner));
  }
}
