package dev.stepweave.training.optim;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * What follows a batch's backward, whatever the objective: the gradient clipped by its global norm,
 * one AdamW step at the schedule's rate, then the EMA updated. Its whole state (the step count,
 * AdamW's moments, the EMA) can be saved and restored, so a resumed run continues bit for bit.
 */
public final class Optimiser {
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

  /**
   * What one optimiser step did.
   *
   * @param gradientNorm the global norm of the gradient before clipping
   */
  public record Step(int index, double learningRate, double loss, double gradientNorm) {}

  /**
   * The loss and gradients of one micro-batch's mean loss.
   *
   * @param share the micro-batch's share of the batch's samples
   */
  public record Evaluation(double share, double loss, Map<String, Tensor> gradients) {}

  /** Everything later steps depend on. */
  public record State(int steps, AdamW.State adamw, Map<String, float[]> ema) {}

  private final Settings settings;
  private final Backend backend;
  private final AdamW adamw;
  private final Backend.StepMemory memory;
  private final Ema ema;
  private int steps;

  /**
   * An optimiser of host tensors.
   *
   * @param trainable the tensors to optimise, by name (the EMA starts from their values)
   */
  public Optimiser(Settings settings, Map<String, Tensor> trainable) {
    this(settings, trainable, new CpuBackend(1));
  }

  /**
   * An optimiser of tensors {@code backend} made: AdamW's moments, the EMA, the clipping and the
   * accumulation all stay on its device with them.
   *
   * @param trainable the tensors to optimise, by name (the EMA starts from their values)
   */
  public Optimiser(Settings settings, Map<String, Tensor> trainable, Backend backend) {
    this.settings = settings;
    this.backend = backend;
    this.adamw = new AdamW(settings.adamw(), backend);
    this.memory = backend.stepMemory();
    this.ema =
        Double.isNaN(settings.emaDecay()) ? null : new Ema(settings.emaDecay(), trainable, backend);
  }

  /** The backend the optimised tensors live on. */
  public Backend backend() {
    return backend;
  }

  /** {@code tensors} (the trainable ones, or their gradients) as host tensors, by name. */
  public Map<String, Tensor> onHost(Map<String, Tensor> tensors) {
    Map<String, Tensor> out = new LinkedHashMap<>();
    tensors.forEach(
        (name, t) -> out.put(name, t.device().kind() == Device.Kind.CPU ? t : backend.download(t)));
    return out;
  }

  /**
   * One step over a batch of {@code microBatches}, evaluated one after another: their gradients
   * accumulated by share ({@link GradientAccumulator}), their losses averaged likewise.
   */
  public Step step(
      Map<String, Tensor> trainable, int microBatches, IntFunction<Evaluation> evaluate) {
    if (microBatches < 1) {
      throw new IllegalArgumentException("a step needs at least one micro-batch");
    }
    Step[] taken = new Step[1];
    // A step of the device's memory: the forwards' activations, the gradients and the clipping's
    // copies die with it, so the next step reuses their memory at once; only the trainable
    // tensors and the optimiser's state survive.
    memory.step(
        () -> {
          GradientAccumulator accumulator = new GradientAccumulator(backend);
          double loss = 0;
          for (int i = 0; i < microBatches; i++) {
            Evaluation e = evaluate.apply(i);
            accumulator.add(e.gradients(), e.share());
            loss += e.share() * e.loss();
          }
          taken[0] = step(trainable, accumulator.total(), loss);
        },
        () -> survivors(trainable));
    return taken[0];
  }

  /** What outlives a step: the trainable tensors, AdamW's moments and the EMA's averages. */
  private List<Tensor> survivors(Map<String, Tensor> trainable) {
    List<Tensor> kept = new ArrayList<>(trainable.values());
    kept.addAll(adamw.moments());
    if (ema != null) {
      kept.addAll(ema.averages());
    }
    return kept;
  }

  /**
   * One step: {@code trainable} (by name, updated in place) moves by {@code gradients}.
   *
   * @param loss the batch's loss, reported with the step
   */
  public Step step(Map<String, Tensor> trainable, Map<String, Tensor> gradients, double loss) {
    double norm = GradientClipping.globalNorm(gradients, backend);
    double coefficient =
        settings.maxGradNorm() > 0 ? GradientClipping.coefficient(norm, settings.maxGradNorm()) : 1;
    double lr = settings.schedule().at(steps);
    adamw.step(trainable, gradients, lr, coefficient);
    if (ema != null) {
      ema.update(trainable);
    }
    return new Step(steps++, lr, loss, norm);
  }

  /** The number of steps taken. */
  public int steps() {
    return steps;
  }

  /** The EMA of the trainable tensors, when the settings keep one. */
  public Optional<Ema> ema() {
    return Optional.ofNullable(ema);
  }

  /** A copy of the state, to save with a checkpoint. */
  public State state() {
    return new State(steps, adamw.state(), ema == null ? null : ema.state());
  }

  /** Continues from a saved state. */
  public void restore(State state) {
    if ((state.ema() == null) != (ema == null)) {
      throw new IllegalArgumentException(
          "the saved state " + (ema == null ? "has" : "lacks") + " an EMA");
    }
    steps = state.steps();
    adamw.restore(state.adamw());
    if (ema != null) {
      ema.restore(state.ema());
    }
  }
}
