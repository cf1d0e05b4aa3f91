package dev.stepweave.training.autograd;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
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
  private final Map<String, Tensor> masters;
  private final Tape derivations;
  private final RecordingBackend backend;
  private final Function<Weights, M> loader;

  private TrainableWeights(
      M model,
      Map<String, Tensor> parameters,
      Map<String, Tensor> masters,
      Tape derivations,
      RecordingBackend backend,
      Function<Weights, M> loader) {
    this.model = model;
    this.parameters = parameters;
    this.masters = masters;
    this.derivations = derivations;
    this.backend = backend;
    this.loader = loader;
  }

  /** Loads a model with {@code loader} from {@code source} onto {@code backend}, in F32. */
  public static <M> TrainableWeights<M> load(
      TensorSource source, RecordingBackend backend, Function<Weights, M> loader) {
    return load(source, backend, loader, null);
  }

  /**
   * The load; {@code masters} null makes them: the parameters themselves on the CPU, F32 host
   * copies of them on a device.
   */
  private static <M> TrainableWeights<M> load(
      TensorSource source,
      RecordingBackend backend,
      Function<Weights, M> loader,
      Map<String, Tensor> masters) {
    Tape derivations = new Tape();
    Weights weights = new Weights(new Tracked(source, derivations), backend, DType.F32);
    M model = backend.recording(derivations, () -> loader.apply(weights));
    Map<String, Tensor> parameters = Map.copyOf(weights.loaded());
    if (masters == null) {
      masters = onHost(backend) ? parameters : hostCopies(backend, parameters);
    }
    return new TrainableWeights<>(model, parameters, masters, derivations, backend, loader);
  }

  private static boolean onHost(RecordingBackend backend) {
    return backend.device().kind() == Device.Kind.CPU;
  }

  private static Map<String, Tensor> hostCopies(
      RecordingBackend backend, Map<String, Tensor> parameters) {
    Map<String, Tensor> out = new LinkedHashMap<>();
    parameters.forEach((name, p) -> out.put(name, backend.download(p).toHost(DType.F32)));
    return Map.copyOf(out);
  }

  /**
   * Whether the model computes with tensors it derived from its parameters at load (beyond the
   * parameters themselves). Such tensors do not follow an in-place update of the parameters, so
   * after an optimiser step the model must be {@link #reloaded}.
   */
  public boolean derivesAtLoad() {
    Set<Storage> own = Collections.newSetFromMap(new IdentityHashMap<>());
    parameters.values().forEach(p -> own.add(p.storage()));
    return derivations.finalOutputs().stream().anyMatch(t -> !own.contains(t.storage()));
  }

  /**
   * Whether the model must be {@link #reloaded} after an optimiser step updated {@link #parameters}
   * in place: it derives tensors at load, or it computes on a device with copies of the host
   * masters.
   */
  public boolean reloadsAfterAStep() {
    return derivesAtLoad() || !onHost(backend);
  }

  /**
   * The model loaded again, the same way, from the parameters' current values: new tensors to
   * compute with (same names, same values) and derivations that agree with them. On a device the
   * host masters stay the same tensors, and their values go up again.
   */
  public TrainableWeights<M> reloaded() {
    InMemoryTensors values = new InMemoryTensors(masters, "(parameters in memory)");
    return onHost(backend) ? load(values, backend, loader) : load(values, backend, loader, masters);
  }

  public M model() {
    return model;
  }

  /**
   * Every parameter by its checkpoint name, sorted, as the optimiser updates it: F32 host tensors
   * (on the CPU the ones the model computes with; on a device their masters, which {@link
   * #reloaded} uploads).
   */
  public Map<String, Tensor> parameters() {
    return new TreeMap<>(masters);
  }

  /**
   * The tensor the model computes with for {@code t}: a parameter's device copy where {@code t} is
   * its master, else {@code t} itself (an adapter's factor, a view of a parameter on the CPU).
   */
  private Tensor computing(String name, Tensor t) {
    return masters.get(name) == t ? parameters.get(name) : t;
  }

  /** Tracks {@code trainable} and whatever the model derived from the parameters at load. */
  public void track(Tape step, Map<String, Tensor> trainable) {
    trainable.forEach((name, t) -> step.track(computing(name, t)));
    derivations.outputs().forEach(step::track);
  }

  /**
   * The gradient of each of {@code trainable}, by name, once the step's backward has run: the
   * derivations' gradients are passed back to the parameters first. Names whose tensor no gradient
   * reached are left out when {@code reachedOnly}, else get zeros.
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
        (name, master) -> {
          Tensor t = computing(name, master);
          if (!reachedOnly || grads.reached(t)) {
            out.put(name, grads.of(t));
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
