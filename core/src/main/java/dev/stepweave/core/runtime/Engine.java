package dev.stepweave.core.runtime;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.CallInfo;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.program.InlineProgram;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java API: submit a {@link Request}, get a {@link RequestHandle}. One scheduler thread serves
 * the pool of one model instance, in ticks: admit what fits ({@link AdmissionController}, in the
 * {@link RequestScheduler}'s order) → ask every running loop for its next step ({@link
 * LoopScheduler}) → group the plans into batched calls ({@link BatchScheduler}, priced by the
 * {@link CostModel}) → run each call and split it ({@link BatchExecutor}) → fold each result into
 * its loop → emit. Requests enter and leave only through their thread-safe handles. See {@code
 * docs/scheduler.md} for the policies.
 */
public final class Engine implements AutoCloseable {
  /** Pool faults in a row, with no step completing between them, before the engine gives up. */
  static final int MAX_CONSECUTIVE_POOL_FAULTS = 3;

  private final EngineConfig config;
  private final Extensions extensions;
  private final CostModel cost;
  private final Profiler profiler;
  private final RequestScheduler<ProgramRun> queue = new RequestScheduler<>();
  private final AdmissionController admission;
  private final LoopScheduler loops = new LoopScheduler();
  private final BatchScheduler batcher;
  private final Thread thread;
  private final Object lock = new Object();
  private final java.util.Set<RequestHandle> active =
      java.util.concurrent.ConcurrentHashMap.newKeySet();
  private volatile ModelInstance model;
  private volatile boolean draining;
  private volatile boolean recovering;
  private volatile boolean closed;
  private volatile int running;
  private long ticks;
  private int consecutivePoolFaults;

  private final AtomicLong admitted = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong completed = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong cancelled = new AtomicLong();
  private final AtomicLong preempted = new AtomicLong();
  private final AtomicLong poolFaults = new AtomicLong();
  private final Map<WorkKind, HistogramRecorder> stepSeconds = new EnumMap<>(WorkKind.class);
  private final HistogramRecorder batchSizes = new HistogramRecorder(1, 2, 4, 8, 16, 32, 64);
  private final HistogramRecorder costError = new HistogramRecorder(0.05, 0.1, 0.25, 0.5, 1, 2, 5);

  public Engine(ModelInstance model) {
    this(model, EngineConfig.defaults());
  }

  public Engine(ModelInstance model, EngineConfig config) {
    this(model, config, Extensions.NONE);
  }

  /**
   * An engine whose deployment enables {@code extensions}: the plugins requests may turn on
   * (checked at submit) and the observers told after every step.
   *
   * @throws dev.stepweave.core.card.InvalidCardException when the instance runs a parallel plan its
   *     card's contract does not allow
   */
  public Engine(ModelInstance model, EngineConfig config, Extensions extensions) {
    model.card().parallelism().check(model.parallelPlan(), model.card().modelId());
    this.model = model;
    this.config = config;
    this.extensions = extensions;
    this.cost = new CostModel(config.deviceFlopsPerMilli(), config.deviceBytesPerMilli());
    this.profiler = new Profiler(cost);
    this.admission = new AdmissionController(config);
    this.batcher = new BatchScheduler(config.maxBatchSize(), config.maxBatchMillis(), cost);
    for (WorkKind k : WorkKind.values()) {
      stepSeconds.put(
          k, new HistogramRecorder(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60));
    }
    this.thread = new Thread(this::serve, "stepweave-scheduler");
    thread.setDaemon(true);
    thread.start();
  }

  /** The instance the pool serves now (a new one after a pool re-initialisation). */
  public ModelInstance model() {
    return model;
  }

  public EngineConfig config() {
    return config;
  }

  /** The deployment's extensions; their metrics count what plugins did over all requests. */
  public Extensions extensions() {
    return extensions;
  }

  /**
   * The engine's own profiler: every call the scheduler ran, measured ({@link
   * Profiler#callMeasurements}); it is what calibrates the cost model. (Per-step measurements are
   * for a profiler the deployment adds as an observer.)
   */
  public Profiler profiler() {
    return profiler;
  }

  /** The cost model's figures, as data. */
  public CostModel.Snapshot costModel() {
    return cost.snapshot();
  }

  /** What the engine is doing now. */
  public EngineStats stats() {
    Map<WorkKind, Histogram> steps = new EnumMap<>(WorkKind.class);
    stepSeconds.forEach((k, h) -> steps.put(k, h.snapshot()));
    return new EngineStats(
        queue.size(),
        running,
        admitted.get(),
        rejected.get(),
        completed.get(),
        failed.get(),
        cancelled.get(),
        steps,
        batchSizes.snapshot(),
        costError.snapshot(),
        !draining && !recovering && !closed);
  }

  /** Requests preempted so far, and pool faults recovered from. */
  public long preemptions() {
    return preempted.get();
  }

  public long poolFaults() {
    return poolFaults.get();
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
    if (draining || closed) {
      rejected.incrementAndGet();
      throw new IllegalStateException(
          "engine is " + (closed ? "closed" : "draining") + ": not accepting requests");
    }
    ModelInstance m = model;
    InlineProgram program;
    List<String> overrides;
    AdmissionController.Reservation reservation;
    try {
      request.validate();
      m.validate(request);
      var plugins = extensions.admit(request, m.card());
      program = InlineProgram.forTask(m.card(), request.task());
      overrides =
          m
              .card()
              .admitSettings(
                  m.samplerFor(request),
                  request.params().steps(),
                  m.precision(),
                  Extensions.consistencyOf(plugins, m.card()),
                  request.overrideRecipe())
              .stream()
              .map(Object::toString)
              .toList();
      ResourceRequest footprint = m.footprint(request);
      reservation =
          new AdmissionController.Reservation(
              request.id(),
              footprint.memoryBytes(),
              cost.staticMillis(footprint),
              footprint.cacheBlocks());
      String never = admission.neverFits(reservation);
      if (never != null) {
        throw new AdmissionRejectedException(
            "request " + request.id() + " can never run on this pool: it " + never);
      }
    } catch (RuntimeException e) {
      rejected.incrementAndGet();
      throw e;
    }
    RequestHandle handle = new RequestHandle(request.id());
    handle.emit(new RequestEvent.Queued(request.id()));
    ProgramRun run =
        new ProgramRun(request, handle, program, overrides, options, reservation, from, extensions);
    active.add(handle);
    synchronized (lock) {
      run.queuedAs(queue.offer(run, options.priority(), options.deadline()));
      lock.notifyAll();
    }
    return handle;
  }

  /**
   * Stops admitting new requests and returns once everything submitted has finished (it still runs
   * to its end).
   */
  public void drain() throws InterruptedException {
    draining = true;
    awaitIdle(Long.MAX_VALUE);
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
    if (awaitIdle(System.nanoTime() + grace.toNanos())) {
      return true;
    }
    active.forEach(RequestHandle::cancel);
    synchronized (lock) {
      lock.notifyAll();
    }
    awaitIdle(Long.MAX_VALUE);
    return false;
  }

  private boolean awaitIdle(long deadlineNanos) throws InterruptedException {
    synchronized (lock) {
      while (queue.size() > 0 || running > 0) {
        long wait = deadlineNanos == Long.MAX_VALUE ? 0 : deadlineNanos - System.nanoTime();
        if (deadlineNanos != Long.MAX_VALUE && wait <= 0) {
          return false;
        }
        lock.wait(deadlineNanos == Long.MAX_VALUE ? 100 : Math.max(1, wait / 1_000_000));
      }
      return true;
    }
  }

  /** Stops the scheduler after the step in progress; unfinished requests fail. */
  @Override
  public void close() {
    closed = true;
    synchronized (lock) {
      lock.notifyAll();
    }
    if (Thread.currentThread() != thread) {
      try {
        thread.join(30_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  // ---- the scheduler thread ----

  private void serve() {
    try {
      while (awaitWork()) {
        tick();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      // A bug in the scheduler itself: fail everything rather than leave futures hanging.
      closed = true;
      stopAll(e);
      throw e;
    }
    stopAll(new IllegalStateException("engine closed"));
  }

  private boolean awaitWork() throws InterruptedException {
    synchronized (lock) {
      while (!closed && queue.size() == 0 && loops.isEmpty()) {
        lock.wait();
      }
      return !closed;
    }
  }

  /** One tick: admit → plan → group → run → split → advance → emit. */
  void tick() {
    ticks++;
    admit();
    List<LoopScheduler.Turn> turns = loops.collect(model, Instant.now());
    List<ProgramRun> runs = new ArrayList<>();
    List<WorkPlan> plans = new ArrayList<>();
    for (LoopScheduler.Turn turn : turns) {
      switch (turn) {
        case LoopScheduler.Planned p -> {
          String overdraft = overdraft(p.run(), p.plan());
          if (overdraft != null) {
            fail(p.run(), new IllegalStateException(overdraft));
          } else {
            runs.add(p.run());
            plans.add(p.plan());
          }
        }
        case LoopScheduler.Finished f -> complete(f.run());
        case LoopScheduler.Stopped s -> stop(s.run(), s.why());
      }
    }
    ModelInstance m = model;
    BatchScheduler.Pool pool =
        new BatchScheduler.Pool(
            m.card().modelId(), m.precision(), m.parallelPlan(), m.weightsVersion());
    for (BatchScheduler.Batch batch : batcher.group(plans, pool)) {
      List<WorkPlan> members = batch.members().stream().map(plans::get).toList();
      long t0 = System.nanoTime();
      List<BatchExecutor.Outcome> outcomes;
      try {
        outcomes = BatchExecutor.run(members);
      } catch (PoolFatalException | Error e) {
        recover(e);
        publishRunning();
        return;
      }
      long nanos = System.nanoTime() - t0;
      record(batch, members, pool, nanos);
      // Each unit's measured time is its share of the call (observers see it per step).
      Duration share = Duration.ofNanos(nanos / members.size());
      for (int i = 0; i < members.size(); i++) {
        ProgramRun run = runs.get(batch.members().get(i));
        fold(run, members.get(i), withElapsed(outcomes.get(i), share));
      }
    }
    consecutivePoolFaults = 0;
    publishRunning();
  }

  long ticks() {
    return ticks;
  }

  /**
   * Records a call's measured time: the engine's histograms, then its profiler (which calibrates
   * the cost model) and the deployment's observers.
   */
  private void record(
      BatchScheduler.Batch batch, List<WorkPlan> members, BatchScheduler.Pool pool, long nanos) {
    WorkPlan unit = members.get(0);
    double millis = nanos / 1e6;
    stepSeconds.get(unit.kind()).observe(millis / 1000);
    batchSizes.observe(members.size());
    if (millis > 0) {
      costError.observe(Math.abs(batch.predictedMillis() - millis) / millis);
    }
    CostModel.Key key = batcher.costKey(batch.key(), members.size(), pool);
    CallInfo call =
        new CallInfo(
            key.modelId(),
            key.kind(),
            key.shape(),
            key.precision(),
            key.batchSize(),
            unit.resources());
    Duration elapsed = Duration.ofNanos(nanos);
    profiler.afterCall(call, elapsed);
    extensions.afterCall(call, elapsed);
  }

  private static BatchExecutor.Outcome withElapsed(BatchExecutor.Outcome o, Duration share) {
    return o instanceof BatchExecutor.Ok ok
        ? new BatchExecutor.Ok(ok.result().withElapsed(share))
        : o;
  }

  /** A work unit asking for more memory than its request reserved, or null when it fits. */
  private static String overdraft(ProgramRun run, WorkPlan plan) {
    long reserved = run.reservation.memoryBytes();
    long needs = plan.resources().memoryBytes();
    if (reserved == 0 || needs <= reserved) {
      return null;
    }
    return "step "
        + (plan.stepIndex() + 1)
        + " of loop '"
        + plan.loopId()
        + "' needs "
        + needs
        + " bytes, more than the "
        + reserved
        + " its request reserved (the model's footprint is wrong)";
  }

  private void fold(ProgramRun run, WorkPlan plan, BatchExecutor.Outcome outcome) {
    switch (outcome) {
      case BatchExecutor.Fault f -> fail(run, f.cause());
      case BatchExecutor.Ok ok -> {
        try {
          StepResult result = ok.result();
          if (!isFinite(result.output())) {
            throw new NonFiniteStepException(run.id(), plan.loopId(), plan.stepIndex());
          }
          run.advance(result, config.recoveryCheckpoints());
        } catch (RuntimeException e) {
          fail(run, e);
        }
      }
    }
  }

  private boolean isFinite(Tensor t) {
    if (t == null || !t.dtype().isFloating()) {
      return true;
    }
    Tensor host = t.device().kind() == Device.Kind.CPU ? t : model.backend().download(t);
    for (float v : host.toFloatArray()) {
      if (!Float.isFinite(v)) {
        return false;
      }
    }
    return true;
  }

  /** Admits queued requests in order while they fit; the first that does not fit waits. */
  private void admit() {
    Instant now = Instant.now();
    for (RequestScheduler.Entry<ProgramRun> e : queue.ordered()) {
      ProgramRun run = e.item();
      if (run.handle.cancelScope().isCancelled()) {
        queue.remove(e);
        end(run);
        cancelled.incrementAndGet();
        run.handle.emit(
            new RequestEvent.Cancelled(run.id(), run.currentLoop(), run.stepsDoneInLoop()));
        run.handle.fail(new CancelledException(run.currentLoop(), run.stepsDoneInLoop()));
        continue;
      }
      if (e.deadline() != null && now.isAfter(e.deadline())) {
        queue.remove(e);
        fail(run, new DeadlineExceededException(e.deadline(), "while queued"));
        continue;
      }
      if (recovering || !(admission.tryReserve(run.reservation) || preemptFor(e))) {
        return; // strict order: a later, smaller request never overtakes a waiting one
      }
      synchronized (lock) {
        queue.remove(e);
        loops.add(run);
        running = loops.size();
      }
      if (run.markStarted()) {
        admitted.incrementAndGet();
        run.handle.emit(new RequestEvent.Started(run.id(), model.card().modelId()));
      }
    }
  }

  /**
   * Under {@link EngineConfig.Preemption#SERIALIZE_TO_HOST}, suspends lower-priority running
   * requests (lowest first, latest admitted first) until {@code e} fits, then reserves it.
   */
  private boolean preemptFor(RequestScheduler.Entry<ProgramRun> e) {
    if (config.preemption() != EngineConfig.Preemption.SERIALIZE_TO_HOST) {
      return false;
    }
    List<ProgramRun> candidates =
        loops.running().reversed().stream()
            .filter(r -> r.entry().priority() < e.priority())
            .sorted(java.util.Comparator.comparingInt(r -> r.entry().priority()))
            .toList();
    List<String> released = new ArrayList<>();
    List<ProgramRun> victims = new ArrayList<>();
    for (ProgramRun r : candidates) {
      if (admission.fits(e.item().reservation, released)) {
        break;
      }
      released.add(r.id());
      victims.add(r);
    }
    if (!admission.fits(e.item().reservation, released)) {
      return false;
    }
    for (ProgramRun v : victims) {
      v.suspend();
      loops.remove(v);
      admission.release(v.id());
      queue.requeue(v.entry());
      preempted.incrementAndGet();
    }
    return admission.tryReserve(e.item().reservation);
  }

  /**
   * A pool-fatal fault: stop admitting, re-initialise the pool, and rewind every running request to
   * its last checkpoint (its next step resumes there, on the new instance).
   */
  private void recover(Throwable cause) {
    poolFaults.incrementAndGet();
    recovering = true;
    try {
      if (++consecutivePoolFaults > MAX_CONSECUTIVE_POOL_FAULTS) {
        for (ProgramRun run : loops.running()) {
          fail(run, new IllegalStateException("pool failed repeatedly: " + cause.getMessage()));
        }
        return;
      }
      ModelInstance fresh = config.recovery().reinitialise(model, cause);
      if (!fresh.card().modelId().equals(model.card().modelId())) {
        throw new IllegalStateException("pool recovery returned another model's instance");
      }
      model = fresh;
      loops.running().forEach(ProgramRun::rewind);
    } catch (RuntimeException e) {
      for (ProgramRun run : loops.running()) {
        fail(run, new IllegalStateException("pool re-initialisation failed: " + e.getMessage()));
      }
    } finally {
      recovering = false;
    }
  }

  private void complete(ProgramRun run) {
    end(run);
    completed.incrementAndGet();
    extensions.metrics().record(run.report());
    run.handle.emit(new RequestEvent.Completed(run.id(), run.elapsed()));
    run.handle.finish(run.result());
  }

  private void stop(ProgramRun run, RuntimeException why) {
    if (why instanceof CancelledException c) {
      end(run);
      cancelled.incrementAndGet();
      run.handle.emit(new RequestEvent.Cancelled(run.id(), c.loopId(), c.stepsDone()));
      run.handle.fail(c);
    } else {
      fail(run, why);
    }
  }

  /** Fails one request: its partial artifacts first, then a one-line failure event. */
  private void fail(ProgramRun run, Throwable why) {
    List<Artifact> partial;
    try {
      partial = run.partialArtifacts();
    } catch (RuntimeException e) {
      partial = List.of();
    }
    end(run);
    failed.incrementAndGet();
    for (Artifact a : partial) {
      run.handle.emit(new RequestEvent.ArtifactReady(run.id(), a));
    }
    run.handle.emit(new RequestEvent.Failed(run.id(), oneLine(why)));
    run.handle.fail(why);
  }

  /** Releases what a request holds: its running slot and its reservation. */
  private void end(ProgramRun run) {
    active.remove(run.handle);
    run.rewind();
    loops.remove(run);
    admission.release(run.id());
  }

  private void stopAll(Throwable why) {
    synchronized (lock) {
      for (RequestScheduler.Entry<ProgramRun> e : queue.ordered()) {
        queue.remove(e);
        fail(e.item(), why);
      }
    }
    for (ProgramRun run : loops.running()) {
      fail(run, why);
    }
    publishRunning();
  }

  private void publishRunning() {
    synchronized (lock) {
      running = loops.size();
      lock.notifyAll();
    }
  }

  private static String oneLine(Throwable e) {
    return e.getMessage() == null
        ? e.getClass().getSimpleName()
        : e.getMessage().lines().findFirst().orElse("");
  }
}
