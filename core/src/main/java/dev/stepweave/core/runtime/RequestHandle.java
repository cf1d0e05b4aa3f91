package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.request.RequestEvent;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * A submitted request, from any thread: its event stream, its result, and cancellation (effective
 * at the next step boundary).
 */
public final class RequestHandle {
  private final String requestId;
  private final EventStream<RequestEvent> events = new EventStream<>();
  private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();
  private final CancelScope cancelScope;
  private volatile RequestPrice price;
  private volatile CostClass costClass = CostClass.LATENCY;
  private volatile StepInFlight stepInFlight;

  RequestHandle(String requestId) {
    this.requestId = requestId;
    this.cancelScope = new CancelScope(requestId);
  }

  public String requestId() {
    return requestId;
  }

  /**
   * All events of this request, replayed from the first for every subscriber, completing after the
   * last ({@code request.completed}, {@code request.failed} or {@code request.cancelled}).
   */
  public Flow.Publisher<RequestEvent> events() {
    return events;
  }

  /** The events so far. */
  public List<RequestEvent> eventsSoFar() {
    return events.snapshot();
  }

  /**
   * Completes with the result, or exceptionally with {@link
   * dev.stepweave.core.request.CancelledException} or the failure.
   */
  public CompletableFuture<GenerationResult> result() {
    return result;
  }

  /** Asks to stop at the next step boundary; false if already asked or finished. */
  public boolean cancel() {
    return !result.isDone() && cancelScope.cancel();
  }

  /** Its predicted cost, from the cost model at submit (null until priced). */
  public RequestPrice price() {
    return price;
  }

  /** The class it runs in (latency unless its price put it in the jumbo class). */
  public CostClass costClass() {
    return costClass;
  }

  /**
   * The step it is running now, if a call of its is in progress: a cancellation then lands when
   * that step ends (a step is indivisible).
   */
  public Optional<StepInFlight> stepInFlight() {
    return Optional.ofNullable(stepInFlight);
  }

  void priced(RequestPrice p, CostClass c) {
    price = p;
    costClass = c;
  }

  void stepping(StepInFlight step) {
    stepInFlight = step;
  }

  CancelScope cancelScope() {
    return cancelScope;
  }

  void emit(RequestEvent e) {
    events.publish(e);
  }

  void finish(GenerationResult r) {
    events.complete();
    result.complete(r);
  }

  void fail(Throwable t) {
    events.complete();
    result.completeExceptionally(t);
  }
}
