package dev.stepweave.training.autograd;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.InMemoryTensors;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * A model loaded for training: its parameters (the tensors {@link Weights#take} loaded, by name)
 * and the record of what the model derived from them while loading — a scaled norm weight, a fused
 * projection. The load runs on a tape that tracks every tensor read from the checkpoint, so such
 * derivations are differentiable too: a training step tracks them with the parameters ({@link
 * #track}) and, after its backward, passes their gradients on to the parameters ({@link
 * #gradientsOf}).
 *
 * @param <M> the model
 */
public final class TrainableWeights<M> {
  private final M model;
  private final Map<String, Tensor> parameters;
  private final Tape derivations;
  private final RecordingBackend backend;
  private final Function<Weights, M> loader;

  private TrainableWeights(
      M model,
      Map<String, Tensor> parameters,
      Tape derivations,
      RecordingBackend backend,
      Function<Weights, M> loader) {
    this.model = model;
    this.parameters = parameters;
    this.derivations = derivations;
    this.backend = backend;
    this.loader = loader;
  }

  /** Loads a model with {@code loader} from {@code source} onto {@code backend}, in F32. */
  public static <M> TrainableWeights<M> load(
      TensorSource source, RecordingBackend backend, Function<Weights, M> loader) {
    Tape derivations = new Tape();
    Weights weights = new Weights(new Tracked(source, derivations), backend, DType.F32);
    M model = backend.recording(derivations, () -> loader.apply(weights));
    return new TrainableWeights<>(
        model, Map.copyOf(weights.loaded()), derivations, backend, loader);
  }

  /**
   * Whether the model computes with tensors it derived from its parameters at load (beyond the
   * parameters themselves and views of them, such as a slice of a stacked projection). Such tensors
   * do not follow an in-place update of the parameters, so after an optimiser step the model must
   * be {@link #reloaded}.
   */
  public boolean derivesAtLoad() {
    Set<Storage> own = Collections.newSetFromMap(new IdentityHashMap<>());
    parameters.values().forEach(p -> own.add(p.storage()));
    return derivations.finalOutputs().stream().anyMatch(t -> !own.contains(t.storage()));
  }

  /**
   * The model loaded again, the same way, from the parameters' current values: new tensors to
   * compute with (same names, same values, on the same backend) and derivations that agree with
   * them.
   */
  public TrainableWeights<M> reloaded() {
    return load(new InMemoryTensors(parameters, "(parameters in memory)"), backend, loader);
  }

  public M model() {
    return model;
  }

  /**
   * Every parameter by its checkpoint name, sorted: the F32 tensors the model computes with, on its
   * backend's device (the masters an optimiser beside them updates in place; there is no host
   * copy).
   */
  public Map<String, Tensor> parameters() {
    return new TreeMap<>(parameters);
  }

  /**
   * Tracks {@code trainable} and, when any of it is a parameter, whatever the model derived from
   * the parameters at load (the DiT's q/k/v stacks, the VAE's scaled norms). An adapter's factors
   * alone (LoRA) leave the base and all it derived frozen: tracked, the backward would compute
   * every stack's weight and bias gradient for nothing.
   */
  public void track(Tape step, Map<String, Tensor> trainable) {
    trainable.values().forEach(step::track);
    Set<Storage> own = Collections.newSetFromMap(new IdentityHashMap<>());
    parameters.values().forEach(p -> own.add(p.storage()));
    if (trainable.values().stream().anyMatch(t -> own.contains(t.storage()))) {
      derivations.outputs().forEach(step::track);
    }
  }

  /** Whether {@code step} differentiates the load's derivations (see {@link #track}). */
  boolean tracksDerivations(Tape step) {
    return derivations.outputs().stream().anyMatch(step::tracks);
  }

  /**
   * The gradient of each of {@code trainable}, by name, once the step's backward has run, where the
   * tensor lives ({@link Gradients#at}): the derivations' gradients are passed back to the
   * parameters first. Names whose tensor no gradient reached are left out when {@code reachedOnly},
   * else get zeros.
   */
  public Map<String, Tensor> gradientsOf(
      Gradients grads, Map<String, Tensor> trainable, boolean reachedOnly) {
    // The parameters and what was derived from them; not the checkpoint's own tensors, which the
    // parameters were copied from and which would only hold a second copy of their gradients.
    Set<Storage> kept = Collections.newSetFromMap(new IdentityHashMap<>());
    parameters.values().forEach(p -> kept.add(p.storage()));
    derivations.outputs().forEach(t -> kept.add(t.storage()));
    derivations.propagate(grads, t -> kept.contains(t.storage()));
    Map<String, Tensor> out = new LinkedHashMap<>();
    trainable.forEach(
        (name, t) -> {
          if (!reachedOnly || grads.reached(t)) {
            out.put(name, grads.at(t));
          }
        });
    return out;
  }

  /** The source, with every tensor it hands out tracked by the load's tape. */
  private record Tracked(TensorSource source, Tape tape) implements TensorSource {
    @Override
    public Set<String> keys() {
      return source.keys();
    }

    @Override
    public TensorInfo info(String key) {
      return source.info(key);
    }

    @Override
    public Tensor load(String key) {
      Tensor t = source.load(key);
      tape.track(t);
      return t;
    }

    @Override
    public Path fileOf(String key) {
      return source.fileOf(key);
    }

    @Override
    public Map<String, String> metadata() {
      return source.metadata();
    }

    @Override
    public void close() {}
  }
}
