package dev.stepweave.core.runtime;

import dev.stepweave.core.extend.CallInfo;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.SwappedComponents;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

/**
 * The engine core of one pool: its layers and one {@link #tick} — requests that passed the {@link
 * Intake} wait in the queue; admit what fits ({@link AdmissionController}, in the {@link
 * RequestScheduler}'s order, making room through the {@link Preemptor}) → ask every running loop
 * for its next step ({@link LoopScheduler}) → while the model's components take turns on the
 * device, pass over the plans of a sleeping one ({@link SwapScheduler}) → group the plans into
 * batched calls ({@link BatchScheduler}, priced by the {@link CostModel}) → run each call,
 * switching the components first when it needs a sleeping one, and split it ({@link BatchExecutor};
 * a pool-fatal fault goes to {@link FaultRecovery}) → fold each result into its loop → emit. It has
 * no thread: a {@link SchedulerThread} calls {@link #tick} in production, a test calls it directly.
 * Submitting is thread-safe; everything else runs on the one thread that ticks.
 */
final class EngineCore {
  private final EngineConfig config;
  // A request completed since the backend's cache was last given back (scheduler thread only).
  private boolean trimDue;
  private final Extensions extensions;
  private final InstantSource clock;
  private final CostModel cost;
  private final Profiler profiler;
  private final RequestScheduler<ProgramRun> queue = new RequestScheduler<>();
  // The jumbo class's own queue: admitted one at a time, only while no latency-class work waits
  // or runs (CostClass).
  private final RequestScheduler<ProgramRun> jumboQueue = new RequestScheduler<>();
  private final AdmissionController admission;
  private final Intake intake;
  private final Preemptor preemptor;
  private final FaultRecovery recovery;
  private final LoopScheduler loops = new LoopScheduler();
  private final BatchScheduler batcher;
  private final SwapScheduler swaps;
  private final BatchExecutor executor = new BatchExecutor(e -> backend().classify(e));
  private final EngineMetrics metrics = new EngineMetrics();
  private final WeightSync weightSync = new WeightSync();
  // Guards the move of a run from the queue to the loops, so that a waiter never sees it in
  // neither; waiters (the scheduler thread, drain) wait on it.
  private final Object lock = new Object();
  private final Set<RequestHandle> active = ConcurrentHashMap.newKeySet();
  private volatile ModelInstance model;
  private volatile int running;

  EngineCore(ModelInstance model, EngineConfig config, Extensions extensions) {
    this(model, config, extensions, InstantSource.system());
  }

  /** A core whose deadlines are judged by {@code clock} (tests move it by hand). */
  EngineCore(ModelInstance model, EngineConfig config, Extensions extensions, InstantSource clock) {
    this.clock = clock;
    this.model = model;
    this.config = config;
    this.extensions = extensions;
    this.cost = new CostModel(config.deviceFlopsPerMilli(), config.deviceBytesPerMilli());
    this.profiler = new Profiler(cost);
    this.admission = new AdmissionController(config);
    this.intake = new Intake(extensions, cost, admission, config.costLimits());
    this.preemptor = new Preemptor(config.preemption(), admission);
    this.recovery = new FaultRecovery(config.recovery());
    this.batcher = new BatchScheduler(config.maxBatchSize(), config.maxBatchMillis(), cost);
    this.swaps = new SwapScheduler(config.switchDeferral());
  }

  ModelInstance model() {
    return model;
  }

  EngineConfig config() {
    return config;
  }

  Extensions extensions() {
    return extensions;
  }

  Profiler profiler() {
    return profiler;
  }

  CostModel.Snapshot costModel() {
    return cost.snapshot();
  }

  EngineStats stats(boolean accepting) {
    return metrics.stats(queued(), running, accepting && !recovery.recovering());
  }

  long preemptions() {
    return preemptor.preempted();
  }

  long poolFaults() {
    return recovery.faults();
  }

  /** Counts a request refused before it reached {@link #submit}. */
  void reject() {
    metrics.rejected.incrementAndGet();
  }

  /** Queues {@code request} once it passed the {@link Intake}. Thread-safe. */
  RequestHandle submit(Request request, ProgramCheckpoint from, RequestOptions options) {
    return submitAll(List.of(request), from, options).getFirst();
  }

  /**
   * Queues {@code requests} together once each passed the {@link Intake}: admission sees all of
   * them or none, so a group that fits starts in one tick and steps in lockstep (an RL group's
   * batching depends on it). If one is refused, none is queued. Thread-safe.
   */
  List<RequestHandle> submitAll(
      List<Request> requests, ProgramCheckpoint from, RequestOptions options) {
    List<RequestHandle> handles = new ArrayList<>();
    List<ProgramRun> runs = new ArrayList<>();
    for (Request request : requests) {
      RequestHandle handle = new RequestHandle(request.id());
      try {
        runs.add(intake.accept(model, request, handle, from, options));
      } catch (RuntimeException e) {
        reject();
        throw e;
      }
      handles.add(handle);
    }
    synchronized (lock) {
      for (int i = 0; i < runs.size(); i++) {
        RequestHandle handle = handles.get(i);
        handle.emit(new RequestEvent.Queued(requests.get(i).id()));
        active.add(handle);
        ProgramRun run = runs.get(i);
        run.queuedAs(queueOf(run).offer(run, options.priority(), options.deadline()));
      }
      lock.notifyAll();
    }
    return handles;
  }

  /**
   * Queues a weight update ({@link WeightSync}): admission freezes, the running loops finish, the
   * weights are swapped between ticks. Thread-safe.
   */
  java.util.concurrent.CompletableFuture<Long> syncWeights(
      String component, java.util.Map<String, Tensor> values) {
    var published = weightSync.request(component, values);
    wake();
    return published;
  }

  /** Asks every request not yet finished to stop at its next step boundary. */
  void cancelAll() {
    active.forEach(RequestHandle::cancel);
    wake();
  }

  /** Wakes every waiter to look again. */
  void wake() {
    synchronized (lock) {
      lock.notifyAll();
    }
  }

  /**
   * Waits until there is something to tick or {@code stop} holds; false when it stops. A pool that
   * stays idle for {@link EngineConfig#trimAfterIdle} after a request ended meanwhile gives the
   * backend's cached memory back, once.
   */
  boolean awaitWork(BooleanSupplier stop) throws InterruptedException {
    while (true) {
      synchronized (lock) {
        long idleSince = System.nanoTime();
        long trimAfter = config.trimAfterIdle().toNanos();
        while (!stop.getAsBoolean() && idle()) {
          if (!trimDue) {
            lock.wait();
            continue;
          }
          long left = trimAfter - (System.nanoTime() - idleSince);
          if (left <= 0) {
            break;
          }
          lock.wait(Math.max(1, left / 1_000_000));
        }
        if (stop.getAsBoolean()) {
          return false;
        }
        if (!idle()) {
          return true;
        }
        trimDue = false;
      }
      // Outside the lock: freeing a cache of blocks takes a driver call each, and submitters wait
      // on the lock.
      model.backend().trim();
    }
  }

  private boolean idle() {
    return queued() == 0 && loops.isEmpty() && !weightSync.waiting();
  }

  /**
   * Waits until nothing is queued or running, or until {@code deadlineNanos} ({@link
   * System#nanoTime}; {@link Long#MAX_VALUE}: no deadline).
   *
   * @return whether it is idle
   */
  boolean awaitIdle(long deadlineNanos) throws InterruptedException {
    synchronized (lock) {
      while (queued() > 0 || running > 0) {
        long wait = deadlineNanos == Long.MAX_VALUE ? 0 : deadlineNanos - System.nanoTime();
        if (deadlineNanos != Long.MAX_VALUE && wait <= 0) {
          return false;
        }
        lock.wait(deadlineNanos == Long.MAX_VALUE ? 100 : Math.max(1, wait / 1_000_000));
      }
      return true;
    }
  }

  /** One tick: admit → plan → group → run → split → advance → emit. */
  void tick() {
    if (weightSync.waiting() && loops.isEmpty()) {
      weightSync.applyAll(model); // between ticks, nothing running: no step sees two versions
    }
    admit();
    // Jumbo work never shares a tick with latency-class work: it sits out while any runs.
    boolean latencyRunning =
        loops.running().stream().anyMatch(r -> r.handle.costClass() == CostClass.LATENCY);
    List<LoopScheduler.Turn> turns =
        loops.collect(
            model,
            clock.instant(),
            r ->
                latencyRunning
                    && r.handle.costClass() == CostClass.JUMBO
                    && !r.handle.cancelScope().isCancelled());
    List<ProgramRun> planned = new ArrayList<>();
    List<WorkPlan> plansMade = new ArrayList<>();
    for (LoopScheduler.Turn turn : turns) {
      switch (turn) {
        case LoopScheduler.Planned p -> {
          String overdraft = overdraft(p.run(), p.plan());
          if (overdraft != null) {
            fail(p.run(), new IllegalStateException(overdraft));
          } else {
            planned.add(p.run());
            plansMade.add(p.plan());
          }
        }
        case LoopScheduler.Finished f -> complete(f.run());
        case LoopScheduler.Stopped s -> stop(s.run(), s.why());
      }
    }
    ModelInstance m = model;
    Optional<SwappedComponents> swapped = m.swappedComponents();
    List<Integer> order =
        swaps.order(
            planned.stream().map(ProgramRun::id).toList(), plansMade, swapped, clock.instant());
    List<ProgramRun> runs = order.stream().map(planned::get).toList();
    List<WorkPlan> plans = order.stream().map(plansMade::get).toList();
    BatchScheduler.Pool pool =
        new BatchScheduler.Pool(
            m.card().modelId(), m.precision(), m.parallelPlan(), m.weightsVersion());
    for (BatchScheduler.Batch batch : batcher.group(plans, pool)) {
      List<WorkPlan> members = batch.members().stream().map(plans::get).toList();
      long t0;
      List<BatchExecutor.Outcome> outcomes;
      Optional<String> wake = toWake(swapped, members);
      double switchMillis = wake.isEmpty() ? 0 : swapped.orElseThrow().switchMillis();
      List<RequestHandle> stepping = stepping(batch, members, runs, switchMillis);
      try {
        if (wake.isPresent() && !switchTo(swapped.orElseThrow(), wake.get(), batch, runs)) {
          continue;
        }
        t0 = System.nanoTime();
        outcomes = executor.run(members);
        if (onDevice(outcomes)) {
          outcomes = synchronize(outcomes);
        }
      } catch (PoolFatalException | Error e) {
        model = recovery.recover(model, e, loops.running(), this::fail);
        publishRunning();
        return;
      } finally {
        stepping.forEach(h -> h.stepping(null));
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
    recovery.tickCompleted();
    publishRunning();
  }

  /**
   * The swapped component a call's members need awake while it sleeps (their batch key holds it, so
   * they all need the same); empty when the call can run as things are.
   */
  private static Optional<String> toWake(
      Optional<SwappedComponents> swapped, List<WorkPlan> members) {
    Optional<String> needs = members.getFirst().call().awakeComponent();
    return swapped.isEmpty() || needs.isEmpty() || needs.equals(swapped.get().awake())
        ? Optional.empty()
        : needs;
  }

  /**
   * Before a call, makes {@code component} the awake one of {@code swapped}: timed and counted
   * apart from the call, so the cost model learns the call's time alone. A pool-fatal failure
   * propagates; any other fails the requests of the call's members.
   *
   * @return whether the call may run
   */
  private boolean switchTo(
      SwappedComponents swapped,
      String component,
      BatchScheduler.Batch batch,
      List<ProgramRun> runs) {
    try {
      long t0 = System.nanoTime();
      swapped.switchTo(component);
      model.backend().synchronize();
      metrics.observeSwitch((System.nanoTime() - t0) / 1e9);
      return true;
    } catch (RuntimeException e) {
      if (executor.faultOf(e) instanceof dev.stepweave.tensor.Fault.PoolFatal p) {
        throw e instanceof PoolFatalException pf ? pf : new PoolFatalException(p.reason(), e);
      }
      for (int member : batch.members()) {
        fail(runs.get(member), e);
      }
      return false;
    }
  }

  /**
   * Records a call's measured time: the engine's histograms, then its profiler (which calibrates
   * the cost model) and the deployment's observers.
   */
  private void record(
      BatchScheduler.Batch batch, List<WorkPlan> members, BatchScheduler.Pool pool, long nanos) {
    WorkPlan unit = members.get(0);
    metrics.observeCall(unit.kind(), nanos / 1e6, members.size(), batch.predictedMillis());
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

  /**
   * Waits for the device (it runs a call asynchronously: its time is known once it is done, and its
   * errors surface here). A pool-fatal error propagates; any other fails the whole call.
   */
  private List<BatchExecutor.Outcome> synchronize(List<BatchExecutor.Outcome> outcomes) {
    try {
      model.backend().synchronize();
      return outcomes;
    } catch (RuntimeException e) {
      if (executor.faultOf(e) instanceof dev.stepweave.tensor.Fault.PoolFatal p) {
        throw e instanceof PoolFatalException pf ? pf : new PoolFatalException(p.reason(), e);
      }
      return outcomes.stream().<BatchExecutor.Outcome>map(o -> new BatchExecutor.Fault(e)).toList();
    }
  }

  /** Tells each member's handle which step it is in, for a cancel to say when it lands. */
  private List<RequestHandle> stepping(
      BatchScheduler.Batch batch,
      List<WorkPlan> members,
      List<ProgramRun> runs,
      double switchMillis) {
    Instant now = clock.instant();
    List<RequestHandle> handles = new ArrayList<>(members.size());
    for (int i = 0; i < members.size(); i++) {
      RequestHandle h = runs.get(batch.members().get(i)).handle;
      WorkPlan p = members.get(i);
      // The longer of the call's calibrated prediction and the unit's static one (a bound), after
      // the switch the call waits for, if any.
      double predicted =
          switchMillis + Math.max(batch.predictedMillis(), cost.staticMillis(p.resources()));
      h.stepping(new StepInFlight(p.loopId(), p.stepIndex(), now, predicted / 1e3));
      handles.add(h);
    }
    return handles;
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
          CheckpointStats before = run.checkpointStats();
          run.advance(result, config.recoveryCheckpoints(), this::backend);
          metrics.addCheckpoints(run.checkpointStats().minus(before));
        } catch (RuntimeException e) {
          fail(run, e);
        }
      }
    }
  }

  /** A device output is checked on its device (one flag comes back), a host one here. */
  private boolean isFinite(Tensor t) {
    return t == null
        || (t.device().kind() == Device.Kind.CPU
            ? Backend.isFiniteOnHost(t)
            : model.backend().isFinite(t));
  }

  private static boolean onDevice(List<BatchExecutor.Outcome> outcomes) {
    for (BatchExecutor.Outcome o : outcomes) {
      if (o instanceof BatchExecutor.Ok ok
          && ok.result().output() != null
          && ok.result().output().device().kind() != Device.Kind.CPU) {
        return true;
      }
    }
    return false;
  }

  /** The backend of the instance the pool serves now. */
  private Backend backend() {
    return model.backend();
  }

  /**
   * Admits latency-class requests in order while they fit (the first that does not fit waits; under
   * {@link EngineConfig.Admission#SHAPE_GROUPS_WHEN_IDLE}, only on an idle pool, one shape's group
   * of at most one batch, displacing nobody); then, only while no latency-class request waits or
   * runs and no jumbo request runs, the first jumbo request.
   */
  private void admit() {
    if (config.admission() == EngineConfig.Admission.SHAPE_GROUPS_WHEN_IDLE) {
      int group = Math.min(config.maxRunning(), config.maxBatchSize());
      admitFrom(queue, loops.isEmpty() ? group : 0, false, true);
    } else {
      admitFrom(queue, Integer.MAX_VALUE, true, false);
    }
    boolean latencyIdle =
        queue.size() == 0
            && loops.running().stream().noneMatch(r -> r.handle.costClass() == CostClass.LATENCY);
    boolean jumboRunning =
        loops.running().stream().anyMatch(r -> r.handle.costClass() == CostClass.JUMBO);
    admitFrom(jumboQueue, latencyIdle && !jumboRunning ? 1 : 0, false, false);
  }

  /**
   * Drops cancelled and overdue entries of {@code q}, and admits up to {@code slots} of the rest in
   * order, stopping at the first that does not fit (a later, smaller request never overtakes a
   * waiting one). With {@code oneShape}, the first admitted fixes the {@link RequestShape} and
   * entries of other shapes are passed over (they wait for a group of their own).
   */
  private void admitFrom(
      RequestScheduler<ProgramRun> q, int slots, boolean mayPreempt, boolean oneShape) {
    Instant now = clock.instant();
    List<RequestScheduler.Entry<ProgramRun>> waiting;
    synchronized (lock) {
      waiting = q.ordered(); // a group queued together is seen together (submitAll)
    }
    RequestShape groupShape = null;
    for (RequestScheduler.Entry<ProgramRun> e : waiting) {
      ProgramRun run = e.item();
      if (run.handle.cancelScope().isCancelled()) {
        q.remove(e);
        end(run);
        metrics.cancelled.incrementAndGet();
        run.handle.emit(
            new RequestEvent.Cancelled(run.id(), run.currentLoop(), run.stepsDoneInLoop()));
        run.handle.fail(new CancelledException(run.currentLoop(), run.stepsDoneInLoop()));
        continue;
      }
      if (e.deadline() != null && now.isAfter(e.deadline())) {
        q.remove(e);
        fail(run, new DeadlineExceededException(e.deadline(), "while queued"));
        continue;
      }
      if (slots == 0
          || (oneShape && groupShape != null && !groupShape.equals(RequestShape.of(run.request)))) {
        continue;
      }
      if (recovery.recovering()
          || weightSync.waiting()
          || !(admission.tryReserve(run.reservation)
              || (mayPreempt && preemptor.makeRoom(e, loops, this::queueOf, this::backend)))) {
        slots = 0; // strict order: the rest wait behind it
        continue;
      }
      slots--;
      groupShape = RequestShape.of(run.request);
      synchronized (lock) {
        q.remove(e);
        loops.add(run);
        running = loops.size();
      }
      if (run.markStarted()) {
        metrics.admitted.incrementAndGet();
        run.handle.emit(new RequestEvent.Started(run.id(), model.card().modelId()));
      }
    }
  }

  private RequestScheduler<ProgramRun> queueOf(ProgramRun run) {
    return run.handle.costClass() == CostClass.JUMBO ? jumboQueue : queue;
  }

  /** Requests waiting in either class. */
  private int queued() {
    return queue.size() + jumboQueue.size();
  }

  private void complete(ProgramRun run) {
    end(run);
    metrics.completed.incrementAndGet();
    extensions.metrics().record(run.report());
    run.handle.emit(new RequestEvent.Completed(run.id(), run.elapsed()));
    run.handle.finish(run.result());
    // A finished request may leave a peak's worth of cached device memory behind (a VAE decode:
    // tens of GB at 480p×81): given back once the pool has been idle a while (awaitWork), not
    // while other requests' steps still reuse those blocks.
    trimDue = true;
  }

  private void stop(ProgramRun run, RuntimeException why) {
    if (why instanceof CancelledException c) {
      end(run);
      metrics.cancelled.incrementAndGet();
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
    metrics.failed.incrementAndGet();
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

  /** Fails every request queued or running with {@code why} (the engine stops). */
  void stopAll(Throwable why) {
    weightSync.failAll(why);
    synchronized (lock) {
      for (RequestScheduler<ProgramRun> q : List.of(queue, jumboQueue)) {
        for (RequestScheduler.Entry<ProgramRun> e : q.ordered()) {
          q.remove(e);
          fail(e.item(), why);
        }
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
