package dev.stepweave.training.wan;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.autograd.Gradients;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.autograd.Tape;
import dev.stepweave.training.autograd.TrainableWeights;
import dev.stepweave.training.objective.FlowMatching;
import java.util.Map;

/**
 * The serving {@link WanTransformer}, loaded on a {@link RecordingBackend}: its forward is the
 * serving forward (same classes, same kernels), and a flow-matching step through it also yields the
 * gradient of every trainable tensor. The parameters are the tensors the model computes with, by
 * checkpoint name, F32 on the backend's device, where the optimiser updates them in place.
 */
public final class TrainableTransformer {
  private final RecordingBackend backend;
  private final TrainableWeights<WanTransformer> weights;
  private final WanTransformer model;

  private TrainableTransformer(RecordingBackend backend, TrainableWeights<WanTransformer> weights) {
    this.backend = backend;
    this.weights = weights;
    this.model = weights.model();
  }

  /** Loads {@code source}'s transformer onto a recording backend over {@code cpu}. */
  public static TrainableTransformer load(
      WanTransformerConfig cfg, TensorSource source, Backend cpu) {
    return load(cfg, source, cpu, RecordingBackend.ActivationCheckpointing.OFF);
  }

  /**
   * Like {@link #load(WanTransformerConfig, TensorSource, Backend)}; with {@code checkpointing}
   * {@link RecordingBackend.ActivationCheckpointing#PER_CHAIN_STEP} each block keeps only its input
   * through the forward and is recomputed in the backward.
   */
  public static TrainableTransformer load(
      WanTransformerConfig cfg,
      TensorSource source,
      Backend cpu,
      RecordingBackend.ActivationCheckpointing checkpointing) {
    return load(cfg, source, new RecordingBackend(cpu, checkpointing));
  }

  /**
   * Loads {@code source}'s transformer onto {@code backend}: over a device's backend, the forward
   * and most backward rules run there ({@link RecordingBackend}).
   */
  public static TrainableTransformer load(
      WanTransformerConfig cfg, TensorSource source, RecordingBackend backend) {
    return new TrainableTransformer(
        backend, TrainableWeights.load(source, backend, w -> WanTransformer.load(cfg, w)));
  }

  public WanTransformer model() {
    return model;
  }

  /**
   * After an optimiser step updated {@link #parameters} in place: this model again when it computes
   * with them directly, else (it derived tensors from them at load) one loaded from their values.
   */
  public TrainableTransformer reloaded() {
    return weights.derivesAtLoad() ? new TrainableTransformer(backend, weights.reloaded()) : this;
  }

  public Backend backend() {
    return backend;
  }

  /** Every parameter by its checkpoint name. */
  public Map<String, Tensor> parameters() {
    return weights.parameters();
  }

  /**
   * One differentiable flow-matching evaluation: the noised input, the prediction, the loss and the
   * gradients of {@code trainable} (by the caller's names) and of the noised input.
   *
   * @param trainable the tensors to differentiate, by name: {@link #parameters} for a full
   *     fine-tune, an adapter's tensors for LoRA
   * @param adapters the adapters each batch row applies ({@link AdapterRows#NONE} for none)
   */
  public LossAndGradients lossAndGradients(
      FlowMatching.Batch batch, Map<String, Tensor> trainable, AdapterRows adapters) {
    return read(evaluate(batch, trainable, adapters));
  }

  /**
   * One differentiable evaluation at a given input with a loss of the caller's making: the
   * prediction at {@code xt} and {@code timestep} under {@code context}, {@code loss} of it (built
   * from backend operations, so it records), and the gradients of {@code trainable} and of {@code
   * xt}. An RL objective comparing the prediction with other tensors is such a loss.
   */
  public LossAndGradients lossAndGradientsAt(
      Tensor xt,
      Tensor timestep,
      Tensor context,
      Map<String, Tensor> trainable,
      AdapterRows adapters,
      java.util.function.UnaryOperator<Tensor> loss) {
    return read(evaluate(xt, trainable, forwardAt(timestep, context, adapters), loss));
  }

  /** {@code e} with its loss and its input's gradient read from the backend. */
  private LossAndGradients read(Evaluation e) {
    Tensor inputGradient = e.inputGradient();
    return new LossAndGradients(
        e.operations(),
        e.xt(),
        e.prediction(),
        backend.download(e.loss()).getFloat(0),
        e.gradients(),
        inputGradient.device().kind() == Device.Kind.CPU
            ? inputGradient
            : backend.download(inputGradient));
  }

  /**
   * {@link #lossAndGradients} without reading anything back: the loss stays a {@code [1]} tensor of
   * the backend, so a device can record the whole evaluation as one graph (nothing in it waits on
   * the host).
   */
  public Evaluation evaluate(
      FlowMatching.Batch batch, Map<String, Tensor> trainable, AdapterRows adapters) {
    FlowMatching.Noised noised = FlowMatching.noised(backend, batch);
    return evaluate(
        noised.xt(),
        trainable,
        forwardAt(noised.timestep(), batch.context(), adapters),
        prediction -> FlowMatching.meanSquaredError(backend, prediction, noised.target()));
  }

  /** The serving forward of an input at {@code timestep} under {@code context}, untapped. */
  private java.util.function.UnaryOperator<Tensor> forwardAt(
      Tensor timestep, Tensor context, AdapterRows adapters) {
    return x -> model.forward(x, timestep, context, TapSink.NONE, BlockHooks.NONE, adapters);
  }

  /** {@code loss(forward(xt))} recorded, and its backward to {@code trainable} and {@code xt}. */
  private Evaluation evaluate(
      Tensor xt,
      Map<String, Tensor> trainable,
      java.util.function.UnaryOperator<Tensor> forward,
      java.util.function.UnaryOperator<Tensor> loss) {
    Tape tape = new Tape();
    weights.track(tape, trainable);
    tape.track(xt);
    Tensor[] prediction = new Tensor[1];
    Tensor value =
        backend.recording(
            tape,
            () -> {
              prediction[0] = forward.apply(xt);
              return loss.apply(prediction[0]);
            });
    int operations = tape.size();
    Gradients grads = tape.backward(value);
    return new Evaluation(
        operations,
        xt,
        prediction[0],
        value,
        weights.gradientsOf(grads, trainable, false),
        grads.at(xt));
  }

  /**
   * What {@link #evaluate} computed, on the backend: {@link LossAndGradients} before its read (the
   * input's gradient may view the step's buffer: read it, do not write into it).
   */
  public record Evaluation(
      int operations,
      Tensor xt,
      Tensor prediction,
      Tensor loss,
      Map<String, Tensor> gradients,
      Tensor inputGradient) {}

  /**
   * What a flow-matching step computed.
   *
   * @param operations how many operations the forward recorded (each keeps its inputs until the
   *     backward): what activation checkpointing reduces
   * @param xt the noised input
   * @param prediction the model's output
   * @param loss the mean squared error
   * @param gradients the gradient of each trainable tensor, by name
   * @param inputGradient the gradient of the noised input
   */
  public record LossAndGradients(
      int operations,
      Tensor xt,
      Tensor prediction,
      float loss,
      Map<String, Tensor> gradients,
      Tensor inputGradient) {}
}
