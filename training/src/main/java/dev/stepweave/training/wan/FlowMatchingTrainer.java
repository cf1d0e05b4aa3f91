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
 * tensors are the model's parameters (a full fine-tune) or an adapter's factors (LoRA, {@link
 * #lora}); nothing else changes. The optimiser works on the model's backend, beside the tensors.
 */
public final class FlowMatchingTrainer {
  private final TrainableTransformer model;
  private final Map<String, Tensor> trainable;
  private final Map<String, Tensor> differentiated;
  private final IntFunction<AdapterRows> adapters;
  private final Runnable afterStep;
  private final Optimiser optimiser;

  /**
   * Steps of tensors the model computes with: {@code trainable} is both what the backward
   * differentiates and what the optimiser updates in place. A LoRA on a device computes with
   * factors other than its F32 masters; {@link #lora} steps it.
   *
   * @param adapters the adapters of a batch of n rows ({@code n -> AdapterRows.NONE} for none)
   */
  public FlowMatchingTrainer(
      TrainableTransformer model,
      Map<String, Tensor> trainable,
      IntFunction<AdapterRows> adapters,
      Optimiser.Settings settings) {
    this(model, trainable, trainable, adapters, () -> {}, settings);
  }

  private FlowMatchingTrainer(
      TrainableTransformer model,
      Map<String, Tensor> trainable,
      Map<String, Tensor> differentiated,
      IntFunction<AdapterRows> adapters,
      Runnable afterStep,
      Optimiser.Settings settings) {
    this.model = model;
    this.trainable = Map.copyOf(trainable);
    this.differentiated = Map.copyOf(differentiated);
    this.adapters = adapters;
    this.afterStep = afterStep;
    this.optimiser = new Optimiser(settings, trainable, model.backend());
  }

  /**
   * Steps of {@code lora}'s factors as a {@code stepweave train} LoRA run takes them, the base
   * weights frozen: every row applies the adapter, the backward differentiates the factors the
   * model computes with ({@link TrainableLora#factors}), the optimiser updates their F32 masters
   * ({@link TrainableLora#parameters}) and the factors follow after each step ({@link
   * TrainableLora#pushed}). On the CPU the masters are the factors.
   */
  public static FlowMatchingTrainer lora(
      TrainableTransformer model, TrainableLora lora, Optimiser.Settings settings) {
    return new FlowMatchingTrainer(
        model, lora.parameters(), lora.factors(), lora::rows, lora::pushed, settings);
  }

  /** One optimiser step over a batch given as micro-batches (one, without accumulation). */
  public Optimiser.Step step(List<FlowMatching.Batch> microBatches) {
    int rows = microBatches.stream().mapToInt(b -> b.x0().dim(0)).sum();
    Optimiser.Step step =
        optimiser.step(
            trainable,
            microBatches.size(),
            i -> {
              FlowMatching.Batch micro = microBatches.get(i);
              int n = micro.x0().dim(0);
              var result = model.lossAndGradients(micro, differentiated, adapters.apply(n));
              return new Optimiser.Evaluation((double) n / rows, result.loss(), result.gradients());
            });
    afterStep.run();
    return step;
  }

  /** The optimiser: its step count, EMA and saved state. */
  public Optimiser optimiser() {
    return optimiser;
  }
}
