package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Tensor;

/** One recorded operation: the tensor it produced and how to pass that tensor's gradient back. */
record Node(String op, Tensor output, BackwardRule rule) {}
