package dev.stepweave.tensor;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * What a recorded device graph may be replayed for (the design's compile-cache key): the work a
 * {@link Backend#replayable} body issues is fixed by the model instance, the component and the loop
 * it serves, the kind of work, the shapes and dtypes of its inputs, the precision and the parallel
 * plan. Two calls with equal keys must issue the same device work; anything else that changes it
 * belongs in the key.
 *
 * @param model the model instance and the version of its weights (its id alone does not name its
 *     weights: a weight sync rebuilds a component in new buffers, which a recording made before it
 *     does not read)
 * @param component the component whose forward it is, e.g. "transformer"
 * @param loop the loop that runs it, e.g. "denoise"
 * @param workKind the kind of step, e.g. "DIFFUSION_STEP"
 * @param shape every input's dtype and shape, in order ({@link #signature})
 * @param precision the precision the component runs in, e.g. "bf16"
 * @param parallelPlan how the work is spread over devices, e.g. "single"
 * @param adapters the low-rank adapters each batch row runs with, as the caller names them (every
 *     adapter's identity and strength per row; a recording reads the adapters' resident weights, so
 *     a reloaded adapter must name itself anew), or "" for none
 */
public record GraphKey(
    String model,
    String component,
    String loop,
    String workKind,
    String shape,
    String precision,
    String parallelPlan,
    String adapters) {
  public GraphKey {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(component, "component");
    Objects.requireNonNull(loop, "loop");
    Objects.requireNonNull(workKind, "workKind");
    Objects.requireNonNull(shape, "shape");
    Objects.requireNonNull(precision, "precision");
    Objects.requireNonNull(parallelPlan, "parallelPlan");
    Objects.requireNonNull(adapters, "adapters");
  }

  /** A key without adapters whose shape field is the {@link #signature} of {@code inputs}. */
  public static GraphKey of(
      String model,
      String component,
      String loop,
      String workKind,
      String precision,
      String parallelPlan,
      List<Tensor> inputs) {
    return new GraphKey(
        model, component, loop, workKind, signature(inputs), precision, parallelPlan, "");
  }

  /** The same key for work that also runs the given adapters (see {@link #adapters}). */
  public GraphKey withAdapters(String composition) {
    return new GraphKey(
        model, component, loop, workKind, shape, precision, parallelPlan, composition);
  }

  /** Throws unless this key's shape is the signature of {@code inputs}. */
  public void requireDescribes(List<Tensor> inputs) {
    String actual = signature(inputs);
    if (!shape.equals(actual)) {
      throw new IllegalArgumentException(
          "graph key shape '" + shape + "' does not describe the inputs '" + actual + "'");
    }
  }

  /** Every input's dtype and shape in order, e.g. {@code "F32[1, 16] I64[4]"}. */
  public static String signature(List<Tensor> inputs) {
    return inputs.stream()
        .map(t -> t.dtype() + Arrays.toString(t.shape()))
        .collect(Collectors.joining(" "));
  }
}
