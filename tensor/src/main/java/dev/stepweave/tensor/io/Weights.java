package dev.stepweave.tensor.io;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Strict weight loading for one component: every tensor is taken by name with the shape the
 * component's config implies, so a missing tensor, a shape that disagrees with config.json, or a
 * tensor nobody asked for ({@link #finish}) is a one-line {@link CheckpointException} naming the
 * file and the tensor.
 */
public final class Weights {
  private final TensorSource source;
  private final Backend backend;
  private final DType computeType;
  private final String prefix;
  private final Set<String> taken;
  private final Map<String, Tensor> loaded;

  public Weights(TensorSource source, Backend backend, DType computeType) {
    this(source, backend, computeType, "", new TreeSet<>(), new LinkedHashMap<>());
  }

  private Weights(
      TensorSource source,
      Backend backend,
      DType computeType,
      String prefix,
      Set<String> taken,
      Map<String, Tensor> loaded) {
    this.source = source;
    this.backend = backend;
    this.computeType = computeType;
    this.prefix = prefix;
    this.taken = taken;
    this.loaded = loaded;
  }

  /** A view whose names are relative to {@code prefix + "."}; it shares the taken-set. */
  public Weights scope(String name) {
    return new Weights(source, backend, computeType, prefix + name + ".", taken, loaded);
  }

  /**
   * Every tensor {@link #take} has loaded through this view or any view sharing its taken-set, by
   * full name in load order: the very tensors the component computes with, so a trainer can
   * enumerate a model's parameters without the model exposing them one by one.
   */
  public Map<String, Tensor> loaded() {
    return Collections.unmodifiableMap(loaded);
  }

  /** The full name {@code name} has in the source under this view, e.g. "blocks.0.attn1.to_q". */
  public String fullName(String name) {
    return prefix + name;
  }

  public Backend backend() {
    return backend;
  }

  public boolean has(String name) {
    return source.keys().contains(prefix + name);
  }

  /**
   * Loads {@code name} onto the backend in the compute dtype, checking its shape.
   *
   * @param expectedShape the shape config.json implies
   */
  public Tensor take(String name, int... expectedShape) {
    String key = claim(name, expectedShape);
    Tensor t = backend.upload(source.load(key), computeType);
    loaded.put(key, t);
    return t;
  }

  /**
   * Loads the tensors {@code names}, each of {@code expectedShape}, stacked into one tensor {@code
   * [names.size(), ...expectedShape]} on the backend: layers a backend multiplies in one call
   * ({@link Backend#linearStacked}), each part uploaded straight into its slice ({@link
   * Backend#uploadStacked}); what {@link #loaded} lists under each name is that name's slice of the
   * stack, so an in-place update of the parameter is an update of the stack.
   */
  public Tensor takeStacked(List<String> names, int... expectedShape) {
    List<String> keys = names.stream().map(n -> claim(n, expectedShape)).toList();
    Tensor stack = backend.uploadStacked(keys.stream().map(source::load).toList(), computeType);
    for (int i = 0; i < keys.size(); i++) {
      loaded.put(keys.get(i), stack.select(0, i));
    }
    return stack;
  }

  /**
   * Checks {@code name} like {@link #take} (present, with the shape config.json implies) and claims
   * it without loading it: for stored parameters the model's computation never reads, which must
   * still agree with the config.
   */
  public void skip(String name, int... expectedShape) {
    claim(name, expectedShape);
  }

  private String claim(String name, int[] expectedShape) {
    String key = prefix + name;
    if (!source.keys().contains(key)) {
      throw new CheckpointException(
          source.fileOf(key)
              + ": missing tensor '"
              + key
              + "' (expected shape "
              + Arrays.toString(expectedShape)
              + ")");
    }
    TensorSource.TensorInfo info = source.info(key);
    if (!Arrays.equals(info.shape(), expectedShape)) {
      throw new CheckpointException(
          source.fileOf(key)
              + ": tensor '"
              + key
              + "' has shape "
              + Arrays.toString(info.shape())
              + " but the config implies "
              + Arrays.toString(expectedShape));
    }
    taken.add(key);
    return key;
  }

  /** Like {@link #take} but returns null when the tensor is absent (optional parameters). */
  public Tensor takeOptional(String name, int... expectedShape) {
    return has(name) ? take(name, expectedShape) : null;
  }

  /** Marks a stored tensor as deliberately unused (e.g. a tied copy). */
  public void ignore(String name) {
    taken.add(prefix + name);
  }

  /**
   * Fails on any stored tensor that no {@link #take} claimed: a checkpoint for a different
   * architecture or config must not load silently.
   */
  public void finish() {
    for (String key : new TreeSet<>(source.keys())) {
      if (!taken.contains(key)) {
        throw new CheckpointException(
            source.fileOf(key)
                + ": unexpected tensor '"
                + key
                + "' (not used by this model's config)");
      }
    }
  }
}
