package dev.stepweave.training.wan;

import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.Ema;
import dev.stepweave.training.optim.GradientAccumulator;
import dev.stepweave.training.optim.GradientClipping;
import dev.stepweave.training.optim.LearningRate;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * Optimiser steps of the flow-matching objective on a {@link TrainableTransformer}: the batch's
 * micro-batches accumulated by their share of its rows, the gradient clipped by its global norm,
 * one AdamW step at the schedule's rate, then the EMA updated. The trainable tensors are the
 * model's parameters (a full fine-tune) or an adapter's factors (LoRA); nothing else changes.
 */
public final class FlowMatchingTrainer {
  /**
   * @param maxGradNorm the global-norm clip, or 0 for none
   * @param emaDecay the EMA's decay, or NaN for no EMA
   */
  public record Settings(
      LearningRate schedule, AdamW.Settings adamw, double maxGradNorm, double emaDecay) {
    public Settings {
      if (maxGradNorm < 0) {
        throw new IllegalArgumentException("max gradient norm must be ≥ 0, not " + maxGradNorm);
      }
    }
  }

  /** What one optimiser step did. */
  public record Step(int index, double learningRate, double loss, double gradientNorm) {}

  private final TrainableTransformer model;
  private final Map<String, Tensor> trainable;
  private final IntFunction<AdapterRows> adapters;
  private final Settings settings;
  private final AdamW optimizer;
  private final Ema ema;
  private int steps;

  /**
   * @param adapters the adapters of a batch of n rows ({@code n -> AdapterRows.NONE} for none)
   */
  public FlowMatchingTrainer(
      TrainableTransformer model,
      Map<String, Tensor> trainable,
      IntFunction<AdapterRows> adapters,
      Settings settings) {
    this.model = model;
    this.trainable = Map.copyOf(trainable);
    this.adapters = adapters;
    this.settings = settings;
    this.optimizer = new AdamW(settings.adamw());
    this.ema = Double.isNaN(settings.emaDecay()) ? null : new Ema(settings.emaDecay(), trainable);
  }

  /** One optimiser step over a batch given as micro-batches (one, without accumulation). */
  public Step step(List<FlowMatching.Batch> microBatches) {
    if (microBatches.isEmpty()) {
      throw new IllegalArgumentException("a step needs at least one micro-batch");
    }
    int rows = microBatches.stream().mapToInt(b -> b.x0().dim(0)).sum();
    GradientAccumulator accumulator = new GradientAccumulator();
    double loss = 0;
    for (FlowMatching.Batch micro : microBatches) {
      int n = micro.x0().dim(0);
      double share = (double) n / rows;
      var result = model.lossAndGradients(micro, trainable, adapters.apply(n));
      accumulator.add(result.gradients(), share);
      loss += share * result.loss();
    }
    Map<String, Tensor> gradients = accumulator.total();
    double norm = Double.NaN;
    if (settings.maxGradNorm() > 0) {
      GradientClipping.Clipped clipped =
          GradientClipping.byGlobalNorm(gradients, settings.maxGradNorm());
      gradients = clipped.gradients();
      norm = clipped.totalNorm();
    }
    double lr = settings.schedule().at(steps);
    optimizer.step(trainable, gradients, lr);
    if (ema != null) {
      ema.update(trainable);
    }
    return new Step(steps++, lr, loss, norm);
  }

  /** The EMA of the trainable tensors, when the settings keep one. */
  public Optional<Ema> ema() {
    return Optional.ofNullable(ema);
  }
}
