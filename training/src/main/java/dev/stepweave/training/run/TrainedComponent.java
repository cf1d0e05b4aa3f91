package dev.stepweave.training.run;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.optim.Optimiser;
import java.util.List;
import java.util.Map;

/** The component a run trains, with its objective: what the run loop asks of any. */
sealed interface TrainedComponent extends AutoCloseable
    permits FlowMatchingComponent, ReconstructionComponent, DistillationComponent, NftComponent {
  /** The tensors the optimiser updates, by name, as the model computes with them now. */
  Map<String, Tensor> trainable();

  /** The backend that made {@link #trainable}: the optimiser works beside them on its device. */
  Backend backend();

  /**
   * Before step {@code step}'s evaluations: an online method makes the step's samples here (an RL
   * run rolls its group out under the current weights).
   */
  default void beforeStep(int step) {}

  /**
   * The loss of the samples {@code samples} (indices into the run's data) and its gradients.
   *
   * @param draws this step's random numbers, consumed in micro-batch order
   * @param share the micro-batch's share of the batch
   */
  Optimiser.Evaluation evaluate(List<Integer> samples, StepDraws draws, double share);

  /**
   * Called after each optimiser step and after a resume restored the weights (a model that derives
   * tensors at load reloads; an RL run publishes the policy to its engine).
   */
  void stepped();

  /** The mean reward of the last step's samples, NaN for a method without rewards. */
  default double reward() {
    return Double.NaN;
  }

  /** Releases what the component holds besides its tensors (an RL run's serving engine). */
  @Override
  default void close() {}
}
