package dev.stepweave.core.loop;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * A resident, loaded card: its components on one backend. A request may run several of the card's
 * loops against one instance; instances hold weights only, never per-request state.
 */
public interface ModelInstance {

  /** Unique among the instances of a pool. */
  String instanceId();

  ModelCard card();

  Backend backend();

  /** The precision this instance computes in. */
  default dev.stepweave.tensor.Precision precision() {
    return card().precision().defaultPrecision();
  }

  /**
   * The sampler a request will run with (its own choice, else the checkpoint's), as the recipe
   * names samplers ("unipc", "euler").
   */
  String samplerFor(dev.stepweave.core.request.Request request);

  /**
   * The flow shift a request will run with (its own, else the checkpoint's), for recipes that
   * assume one. The default is the request's, or 1 (no shift) when it gives none.
   */
  default double shiftFor(dev.stepweave.core.request.Request request) {
    return request.params().shift().orElse(1.0);
  }

  /**
   * Reads an adapter file against this model, for the deployment's registry. The default refuses
   * every file: a model that takes adapters says how it reads them.
   *
   * @throws dev.stepweave.core.extend.InvalidAdapterException naming the key or tensor that does
   *     not fit
   */
  default dev.stepweave.core.extend.AdapterInfo inspectAdapter(java.nio.file.Path file) {
    return dev.stepweave.core.extend.AdapterInspector.NONE.inspect(file);
  }

  /**
   * Rejects a request this model cannot run (model-specific settings, overrides), before it is
   * queued.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException naming the bad setting
   */
  default void validate(dev.stepweave.core.request.Request request) {}

  /**
   * The worst case one request holds while it runs on this instance, for admission: resident bytes
   * of all its loop states and handed-on results, the largest peak activation of any of its work
   * units, cache blocks, and the static cost (FLOPs, bytes, or device-ms) of all its steps. The
   * engine refuses a work unit whose memory exceeds the reservation, so it must not under-estimate.
   * The default reserves nothing (a model that cannot say is admitted on compute alone).
   */
  default ResourceRequest footprint(dev.stepweave.core.request.Request request) {
    return ResourceRequest.NONE;
  }

  /**
   * The request's loops, each with its step count and one step's needs, for pricing the whole
   * request at admission (its predicted device time and its largest indivisible step). The default,
   * {@link WorkEstimate#NONE}, prices the request as one step of its {@link #footprint}.
   */
  default WorkEstimate workEstimate(dev.stepweave.core.request.Request request) {
    return WorkEstimate.NONE;
  }

  /**
   * How this instance is spread over devices ("single" for one device, else {@code axis=degree}
   * pairs: see {@link dev.stepweave.core.card.ParallelismContract}); the engine refuses an instance
   * whose plan its card's contract does not allow. Plans of instances with different parallel plans
   * never share a batched call.
   */
  default String parallelPlan() {
    return dev.stepweave.core.card.ParallelismContract.SINGLE;
  }

  /**
   * The components of this instance that take turns on the device, one awake at a time; empty (the
   * default) when every component stays awake. The engine reads it on its scheduler thread, once a
   * tick, to order the tick's calls so that switches are rare.
   */
  default java.util.Optional<SwappedComponents> swappedComponents() {
    return java.util.Optional.empty();
  }

  /** The weights version; bumps when weights are swapped in place. */
  default long weightsVersion() {
    return 0;
  }

  /**
   * Replaces component {@code component}'s weights by {@code values} (host tensors by checkpoint
   * name) and bumps {@link #weightsVersion}; the engine calls it with no step in flight ({@code
   * Engine.syncWeights}).
   *
   * @return the new weights version
   * @throws UnsupportedOperationException when this instance cannot swap weights
   * @throws IllegalArgumentException naming a component or tensor that does not fit
   */
  default long swapWeights(String component, java.util.Map<String, Tensor> values) {
    throw new UnsupportedOperationException(
        "model '" + card().modelId() + "' cannot swap weights in place");
  }

  /**
   * A loaded component by card id.
   *
   * @throws IllegalArgumentException when the card has no such component or it is of another type
   */
  <T> T component(String id, Class<T> type);

  /**
   * The loop the card calls {@code loopId}, bound to this instance.
   *
   * @throws IllegalArgumentException when the card has no such loop
   */
  Loop<? extends LoopState> loop(String loopId);
}
