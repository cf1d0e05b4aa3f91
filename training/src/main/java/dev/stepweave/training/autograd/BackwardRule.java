package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.function.Predicate;

/**
 * How one recorded operation passes the gradient of its output back to its inputs: given the
 * output's gradient (row-major over the output's shape), the contributions to each input that
 * {@code wanted} accepts. An input read through a view (a broadcast, a slice, a permutation) gets
 * its contribution addressed to that view, so a rule never needs to know how its input was made.
 */
@FunctionalInterface
interface BackwardRule {
  List<Contribution> apply(float[] gradOutput, Predicate<Tensor> wanted);
}
