package dev.stepweave.training.run;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.optim.Optimiser;
import java.util.List;
import java.util.Map;

/** The component a run trains, with its objective: what the run loop asks of either. */
sealed interface TrainedComponent
    permits FlowMatchingComponent, ReconstructionComponent, DistillationComponent {
  /** The tensors the optimiser updates, by name, as the model computes with them now. */
  Map<String, Tensor> trainable();

  /**
   * The loss of the samples {@code samples} (indices into the run's data) and its gradients.
   *
   * @param draws this step's random numbers, consumed in micro-batch order
   * @param share the micro-batch's share of the batch
   */
  Optimiser.Evaluation evaluate(List<Integer> samples, StepDraws draws, double share);

  /** Called after each optimiser step (a model that derives tensors at load reloads). */
  void stepped();
}
