package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.function.Predicate;

/**
 * How one recorded operation passes the gradient of its output back to its inputs: given the
 * output's gradient (a contiguous F32 tensor of the output's shape, on the output's device), the
 * contributions to each input that {@code wanted} accepts. An input read through a view (a
 * broadcast, a slice, a permutation) gets its contribution addressed to that view, so a rule never
 * needs to know how its input was made.
 */
@FunctionalInterface
interface BackwardRule {
  List<Contribution> apply(Tensor gradOutput, Predicate<Tensor> wanted);

  /**
   * A rule computed on the host, in row-major float arrays: its output gradient is read from {@code
   * device} (a download unless that is the CPU), and its contributions are host tensors that {@link
   * Gradients} takes back to the device. What a rule in backend operations would not pay; the rules
   * that are not yet written so run this way on a GPU.
   */
  static BackwardRule onHost(Backend device, OnHost rule) {
    return (g, wanted) -> rule.apply(Host.values(device, g), wanted);
  }

  /** {@link BackwardRule}'s host form: the output's gradient in row-major order. */
  @FunctionalInterface
  interface OnHost {
    List<Contribution> apply(float[] gradOutput, Predicate<Tensor> wanted);
  }
}
