package dev.stepweave.core.loop;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A structured cancellation target (one request). Cancelling is a flag; it takes effect at the next
 * step boundary, where the driver checks it, never in the middle of a step.
 */
public final class CancelScope {
  private final String requestId;
  private final AtomicBoolean cancelled = new AtomicBoolean();

  public CancelScope(String requestId) {
    this.requestId = requestId;
  }

  public String requestId() {
    return requestId;
  }

  /** Asks for cancellation; returns false when it was already asked. */
  public boolean cancel() {
    return cancelled.compareAndSet(false, true);
  }

  public boolean isCancelled() {
    return cancelled.get();
  }
}
