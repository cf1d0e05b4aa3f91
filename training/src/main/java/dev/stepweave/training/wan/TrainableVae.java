package dev.stepweave.training.wan;

import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.autograd.Gradients;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.autograd.Tape;
import dev.stepweave.training.autograd.TrainableWeights;
import dev.stepweave.training.objective.Reconstruction;
import java.util.Map;

/**
 * The serving {@link WanVae} on a {@link RecordingBackend}: its own encode (chunked causal
 * convolutions and all) and decode, differentiated end to end for the reconstruction objective.
 */
public final class TrainableVae {
  private final RecordingBackend backend;
  private final TrainableWeights<WanVae> weights;
  private final WanVae vae;

  private TrainableVae(RecordingBackend backend, TrainableWeights<WanVae> weights) {
    this.backend = backend;
    this.weights = weights;
    this.vae = weights.model();
  }

  public static TrainableVae load(WanVaeConfig cfg, TensorSource source, Backend cpu) {
    return load(cfg, source, new RecordingBackend(cpu));
  }

  /** Loads {@code source}'s VAE onto {@code backend} (over a device's backend: see it). */
  public static TrainableVae load(WanVaeConfig cfg, TensorSource source, RecordingBackend backend) {
    return new TrainableVae(
        backend, TrainableWeights.load(source, backend, w -> WanVae.load(cfg, w)));
  }

  public Backend backend() {
    return backend;
  }

  /**
   * The VAE loaded again from its parameters' current values, when it derives tensors from them at
   * load (which an in-place update leaves behind); else this one.
   */
  public TrainableVae reloaded() {
    return weights.derivesAtLoad() ? new TrainableVae(backend, weights.reloaded()) : this;
  }

  /** Every parameter by its checkpoint name. */
  public Map<String, Tensor> parameters() {
    return weights.parameters();
  }

  /**
   * The reconstruction {@code decode(encode(video).mean)}, its {@link Reconstruction#l1PlusL2} loss
   * against the video, and the gradient of every parameter; a parameter the loss does not depend on
   * (the encoder's log-variance half) gets none.
   */
  public Result reconstructionStep(Tensor video) {
    Tape tape = new Tape();
    Map<String, Tensor> parameters = weights.parameters();
    weights.track(tape, parameters);
    Tensor[] reconstruction = new Tensor[1];
    Tensor loss =
        backend.recording(
            tape,
            () -> {
              reconstruction[0] = vae.decode(vae.encode(video).mean());
              return Reconstruction.l1PlusL2(backend, reconstruction[0], video);
            });
    Gradients grads = tape.backward(loss);
    return new Result(
        reconstruction[0],
        backend.download(loss).getFloat(0),
        weights.gradientsOf(grads, parameters, true));
  }

  /** What a reconstruction step computed. */
  public record Result(Tensor reconstruction, float loss, Map<String, Tensor> gradients) {}
}
