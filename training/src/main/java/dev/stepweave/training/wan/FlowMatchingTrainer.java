package dev.stepweave.training.wan;

import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.Optimiser;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Optimiser steps of the flow-matching objective on a {@link TrainableTransformer}: the batch's
 * micro-batches accumulated by their share of its rows, the gradient clipped by its global norm,
 * one AdamW step at the schedule's rate, then the EMA updated ({@link Optimiser}). The trainable
 * tensors are the model's parameters (a full fine-tune) or an adapter's factors (LoRA); nothing
 * else changes. The optimiser works on the model's backend, beside the tensors.
 */
public final class FlowMatchingTrainer {
  private final TrainableTransformer model;
  private final Map<String, Tensor> trainable;
  private final IntFunction<AdapterRows> adapters;
  private final Optimiser optimiser;

  /**
   * @param adapters the adapters of a batch of n rows ({@code n -> AdapterRows.NONE} for none)
   */
  public FlowMatchingTrainer(
      TrainableTransformer model,
      Map<String, Tensor> trainable,
      IntFunction<AdapterRows> adapters,
      Optimiser.Settings settings) {
    this.model = model;
    this.trainable = Map.copyOf(trainable);
    this.adapters = adapters;
    this.optimiser = new Optimiser(settings, trainable, model.backend());
  }

  /** One optimiser step over a batch given as micro-batches (one, without accumulation). */
  public Optimiser.Step step(List<FlowMatching.Batch> microBatches) {
    int rows = microBatches.stream().mapToInt(b -> b.x0().dim(0)).sum();
    return optimiser.step(
        trainable,
        microBatches.size(),
        i -> {
          FlowMatching.Batch micro = microBatches.get(i);
          int n = micro.x0().dim(0);
          var result = model.lossAndGradients(micro, trainable, adapters.apply(n));
          return new Optimiser.Evaluation((double) n / rows, result.loss(), result.gradients());
        });
  }

  /** The optimiser: its step count, EMA and saved state. */
  public Optimiser optimiser() {
    return optimiser;
  }
}
