package dev.stepweave.core.runtime;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.request.Request;
import java.time.Duration;
import java.util.List;

/**
 * The Java API: submit a {@link Request}, get a {@link RequestHandle}. Behind it, the {@link
 * EngineCore} of the pool of one model instance ticks (admit → plan → group → run → split → advance
 * → emit) on one {@link SchedulerThread}, started at the first submit (or by {@link #start}).
 * Requests enter and leave only through their thread-safe handles. See {@code docs/scheduler.md}
 * for the policies.
 */
public final class Engine implements AutoCloseable {
  private final EngineCore core;
  private final SchedulerThread scheduler;
  private volatile boolean draining;

  public Engine(ModelInstance model) {
    this(model, EngineConfig.defaults());
  }

  public Engine(ModelInstance model, EngineConfig config) {
    this(model, config, Extensions.NONE);
  }

  /**
   * An engine whose deployment enables {@code extensions}: the plugins requests may turn on
   * (checked at submit) and the observers told after every step. Its scheduler thread starts with
   * the first request.
   *
   * @throws dev.stepweave.core.card.InvalidCardException when the instance runs a parallel plan its
   *     card's contract does not allow
   */
  public Engine(ModelInstance model, EngineConfig config, Extensions extensions) {
    model.card().parallelism().check(model.parallelPlan(), model.card().modelId());
    this.core = new EngineCore(model, config, extensions);
    this.scheduler = new SchedulerThread(core);
  }

  /** Starts the scheduler thread now rather than at the first submit; idempotent. */
  public Engine start() {
    scheduler.start();
    return this;
  }

  /** The instance the pool serves now (a new one after a pool re-initialisation). */
  public ModelInstance model() {
    return core.model();
  }

  public EngineConfig config() {
    return core.config();
  }

  /** The deployment's extensions; their metrics count what plugins did over all requests. */
  public Extensions extensions() {
    return core.extensions();
  }

  /**
   * The engine's own profiler: every call the scheduler ran, measured ({@link
   * Profiler#callMeasurements}); it is what calibrates the cost model. (Per-step measurements are
   * for a profiler the deployment adds as an observer.)
   */
  public Profiler profiler() {
    return core.profiler();
  }

  /** The cost model's figures, as data. */
  public CostModel.Snapshot costModel() {
    return core.costModel();
  }

  /** What the engine is doing now. */
  public EngineStats stats() {
    return core.stats(!draining && !scheduler.closed());
  }

  /** What a fleet router reads of this engine, now. */
  public DeploymentCard deploymentCard() {
    ModelInstance m = core.model();
    EngineConfig c = core.config();
    EngineStats s = stats();
    return new DeploymentCard(
        DeploymentCard.SCHEMA_VERSION,
        m.card(),
        m.instanceId(),
        m.precision(),
        m.backend().name(),
        costModel(),
        c.costLimits(),
        new DeploymentCard.Budgets(c.maxRunning(), c.maxBatchSize(), c.memoryBudgetBytes()),
        new DeploymentCard.Load(
            s.queued(),
            s.runningLoops(),
            s.accepting(),
            poolFaults(),
            s.admitted(),
            s.completed(),
            s.failed()));
  }

  /** Requests preempted so far, and pool faults recovered from. */
  public long preemptions() {
    return core.preemptions();
  }

  public long poolFaults() {
    return core.poolFaults();
  }

  /**
   * Validates the request and the card's recipe, then queues it.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException for a request no model can run
   * @throws dev.stepweave.core.card.RecipeRefusedException when the recipe refuses its settings
   * @throws AdmissionRejectedException when it could never fit this pool's budgets
   * @throws IllegalStateException when the engine is draining or closed
   */
  public RequestHandle submit(Request request) {
    return submit(request, null, RequestOptions.DEFAULT);
  }

  /**
   * Like {@link #submit(Request)}, handing where the run stands to {@code sink} after each step.
   */
  public RequestHandle submit(Request request, CheckpointSink sink) {
    return submit(request, null, RequestOptions.DEFAULT.withSink(sink));
  }

  /**
   * Like {@link #submit(Request)}, with a priority, a deadline and a checkpoint sink (named apart
   * so {@code submit(r, null)} stays unambiguous).
   */
  public RequestHandle submitWith(Request request, RequestOptions options) {
    return submit(request, null, options);
  }

  /**
   * Queues {@code requests} together: admission sees all of them or none, so a group that fits
   * starts in one tick and its steps batch together (K samples of one prompt, an RL group). Each is
   * validated as {@link #submit(Request)} validates; if one is refused, none is queued.
   */
  public List<RequestHandle> submitAll(List<Request> requests) {
    if (draining || scheduler.closed()) {
      core.reject();
      throw new IllegalStateException(
          "engine is " + (scheduler.closed() ? "closed" : "draining") + ": not accepting requests");
    }
    scheduler.start();
    return core.submitAll(requests, null, RequestOptions.DEFAULT);
  }

  /** Continues a run from a checkpoint written by an earlier run of the same request. */
  public RequestHandle resume(Request request, ProgramCheckpoint from, CheckpointSink sink) {
    return resumeWith(request, from, RequestOptions.DEFAULT.withSink(sink));
  }

  /**
   * Like {@link #resume(Request, ProgramCheckpoint, CheckpointSink)}, with options (named apart so
   * {@code resume(r, cp, null)} stays unambiguous).
   */
  public RequestHandle resumeWith(Request request, ProgramCheckpoint from, RequestOptions options) {
    if (!from.requestId().equals(request.id())) {
      throw new IllegalArgumentException(
          "checkpoint of request " + from.requestId() + " cannot resume request " + request.id());
    }
    return submit(request, from, options);
  }

  private RequestHandle submit(Request request, ProgramCheckpoint from, RequestOptions options) {
    if (draining || scheduler.closed()) {
      core.reject();
      throw new IllegalStateException(
          "engine is " + (scheduler.closed() ? "closed" : "draining") + ": not accepting requests");
    }
    scheduler.start();
    return core.submit(request, from, options);
  }

  /**
   * Syncs new weights for {@code component} into the live pool (a trainer publishing its policy):
   * admission freezes, the running requests finish under the weights they started with, the weights
   * are swapped with no step in flight, the instance's weights version bumps (every artifact's
   * provenance names it, and caches keyed by the old version are not reused), and admission
   * resumes. Requests submitted meanwhile wait; none is refused.
   *
   * @param values host tensors by checkpoint name: every tensor the component has, of its shapes
   * @return completes with the new weights version once it is in force, or exceptionally when the
   *     model refuses the update (its weights unchanged)
   */
  public java.util.concurrent.CompletableFuture<Long> syncWeights(
      String component, java.util.Map<String, dev.stepweave.tensor.Tensor> values) {
    if (scheduler.closed()) {
      throw new IllegalStateException("engine is closed: cannot sync weights");
    }
    scheduler.start();
    return core.syncWeights(component, values);
  }

  /**
   * Stops admitting new requests and returns once everything submitted has finished (it still runs
   * to its end).
   */
  public void drain() throws InterruptedException {
    draining = true;
    core.awaitIdle(Long.MAX_VALUE);
  }

  /**
   * Like {@link #drain()}, but waits at most {@code grace}; then every request still queued or
   * running is cancelled at its next step boundary (its checkpoint sink already holds its last
   * step, to resume it elsewhere).
   *
   * @return true when everything finished within {@code grace}
   */
  public boolean drain(Duration grace) throws InterruptedException {
    draining = true;
    if (core.awaitIdle(System.nanoTime() + grace.toNanos())) {
      return true;
    }
    core.cancelAll();
    core.awaitIdle(Long.MAX_VALUE);
    return false;
  }

  /** Stops the scheduler after the step in progress; unfinished requests fail. */
  @Override
  public void close() {
    scheduler.close();
  }
}
