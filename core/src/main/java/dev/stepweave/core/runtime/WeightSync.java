package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.tensor.Tensor;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Weight updates into a live pool (design §10's lifecycle): a requested update freezes admission;
 * the loops already running finish under the weights they started with (so a rollout never
 * straddles two versions); once none runs, the core swaps the weights between two ticks — no step
 * in flight — and the instance bumps its weights version, which every cache key and batch pool
 * carries, so nothing computed under the old weights is reused; then it publishes the version and
 * admission resumes. Requests that arrive meanwhile wait in the queue; none is refused.
 */
final class WeightSync {
  private record Pending(
      String component, Map<String, Tensor> values, CompletableFuture<Long> published) {}

  private final ConcurrentLinkedQueue<Pending> pending = new ConcurrentLinkedQueue<>();

  /**
   * Queues an update; the future completes with the new version once it is in force. The values are
   * copied now: a trainer goes on updating its parameters in place while the update waits.
   */
  CompletableFuture<Long> request(String component, Map<String, Tensor> values) {
    Map<String, Tensor> snapshot = new java.util.HashMap<>();
    values.forEach((name, t) -> snapshot.put(name, copy(t)));
    CompletableFuture<Long> published = new CompletableFuture<>();
    pending.add(new Pending(component, Map.copyOf(snapshot), published));
    return published;
  }

  /** A contiguous host copy of a host tensor, in its own dtype. */
  private static Tensor copy(Tensor t) {
    if (!t.isContiguous()) {
      return t.toHost(t.dtype());
    }
    Tensor out = Tensor.zeros(t.dtype(), t.shape());
    java.lang.foreign.MemorySegment.copy(t.segment(), 0, out.storage().segment(), 0, t.byteSize());
    return out;
  }

  /** Whether an update waits: admission stays frozen until it is applied. */
  boolean waiting() {
    return !pending.isEmpty();
  }

  /**
   * Applies every waiting update, in order, to {@code model}; called with nothing running. An
   * update the model refuses fails its own future and leaves the weights as they were.
   */
  void applyAll(ModelInstance model) {
    for (Pending p; (p = pending.poll()) != null; ) {
      try {
        p.published().complete(model.swapWeights(p.component(), p.values()));
      } catch (RuntimeException e) {
        p.published().completeExceptionally(e);
      }
    }
  }

  /** Fails every waiting update (the engine stops). */
  void failAll(Throwable why) {
    for (Pending p; (p = pending.poll()) != null; ) {
      p.published().completeExceptionally(why);
    }
  }
}
