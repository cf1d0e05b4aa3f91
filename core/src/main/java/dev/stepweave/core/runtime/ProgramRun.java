package dev.stepweave.core.runtime;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopContext;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.LoopStepper;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.memory.Reservation;
import dev.stepweave.core.program.InlineProgram;
import dev.stepweave.core.request.AppliedAdapter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.tensor.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * One request's program run, a step at a time: the loop in progress (its {@link LoopStepper}), the
 * results and artifacts of the loops already finished, and its last checkpoint. Only the scheduler
 * thread touches it.
 */
final class ProgramRun {
  final Request request;
  final RequestHandle handle;
  final RequestOptions options;
  final Reservation reservation;
  private final InlineProgram program;
  private final List<String> overrides;
  private final Map<String, LoopResult> finished = new LinkedHashMap<>();
  private final Map<String, Duration> timings = new LinkedHashMap<>();
  private final List<Artifact> artifacts = new ArrayList<>();
  private final Extensions extensions;
  private final List<ResolvedAdapter> adapters;
  private final List<AutoCloseable> held = new ArrayList<>();
  private final Map<String, Long> report = new TreeMap<>();
  private RequestScheduler.Entry<ProgramRun> entry;
  private ProgramCheckpoint resumeFrom;
  private ProgramCheckpoint lastCheckpoint;
  private Supplier<ProgramCheckpoint> queuedCheckpoint; // taken, its copies still on their way
  private final HostCheckpoints capture = new HostCheckpoints();
  private Duration workSinceCapture = Duration.ZERO;
  private LoopStepper<?> stepper;
  private long loopStartNanos;
  private long startNanos;
  private boolean started;

  ProgramRun(
      Request request,
      RequestHandle handle,
      InlineProgram program,
      List<String> overrides,
      RequestOptions options,
      Reservation reservation,
      ProgramCheckpoint from,
      Extensions extensions,
      List<ResolvedAdapter> adapters) {
    this.request = request;
    this.extensions = extensions;
    this.adapters = List.copyOf(adapters);
    this.handle = handle;
    this.program = program;
    this.overrides = List.copyOf(overrides);
    this.options = options;
    this.reservation = reservation;
    this.resumeFrom = from;
    if (from != null) {
      finished.putAll(from.finished());
    }
  }

  String id() {
    return request.id();
  }

  RequestScheduler.Entry<ProgramRun> entry() {
    return entry;
  }

  void queuedAs(RequestScheduler.Entry<ProgramRun> e) {
    entry = e;
  }

  /** Marks the first admission; false when it was admitted before (a preempted run resuming). */
  boolean markStarted() {
    if (started) {
      return false;
    }
    started = true;
    startNanos = System.nanoTime();
    return true;
  }

  Duration elapsed() {
    return Duration.ofNanos(System.nanoTime() - startNanos);
  }

  /** The loop in progress, or the next one to start. */
  String currentLoop() {
    if (stepper != null) {
      return stepper.loopId();
    }
    return program.loopIds().stream()
        .filter(id -> !finished.containsKey(id))
        .findFirst()
        .orElse(program.loopIds().getLast());
  }

  int stepsDoneInLoop() {
    return stepper == null ? 0 : stepper.stepsDone();
  }

  /**
   * The next step's plan, starting and finishing loops on the way (a finished loop's artifacts are
   * published), or null when the program is done.
   *
   * @throws dev.stepweave.core.request.CancelledException when cancelled (a step boundary)
   */
  WorkPlan next(ModelInstance model) {
    while (true) {
      if (stepper == null) {
        String loopId = currentLoop();
        if (finished.containsKey(loopId)) {
          return null;
        }
        SerializedState resume =
            resumeFrom != null && resumeFrom.current().loopId().equals(loopId)
                ? resumeFrom.current()
                : null;
        stepper = start(model.loop(loopId), model, resume);
        loopStartNanos = System.nanoTime();
      }
      WorkPlan plan = stepper.next();
      if (plan != null) {
        return plan;
      }
      LoopResult result = stepper.finish();
      String loopId = stepper.loopId();
      stepper = null;
      timings.put(loopId, Duration.ofNanos(System.nanoTime() - loopStartNanos));
      finished.put(loopId, result);
      result.report().forEach((k, v) -> report.merge(k, v, Long::sum));
      Map<String, String> reported = new TreeMap<>();
      report.forEach((k, v) -> reported.put(k, Long.toString(v)));
      for (Artifact a : result.artifacts()) {
        Artifact stamped =
            stamped(
                a.withProvenance(
                    a.provenance().withRecipeOverrides(overrides).withSettings(reported)));
        artifacts.add(stamped);
        handle.emit(new RequestEvent.ArtifactReady(request.id(), stamped));
      }
    }
  }

  private <S extends LoopState> LoopStepper<S> start(
      Loop<S> loop, ModelInstance model, SerializedState resume) {
    return LoopStepper.start(loop, request, model, new Context(), resume);
  }

  /**
   * Folds in the result of the step {@link #next} planned, then checkpoints when the policy says so
   * (kept in host memory for recovery and preemption) and for the request's sink, if any.
   */
  void advance(StepResult result, RecoveryCheckpoints policy, Supplier<Backend> backend) {
    // The engine synchronised the device after this step's call: the capture queued after the
    // previous step is complete now.
    confirmQueued();
    stepper.advance(result);
    workSinceCapture = workSinceCapture.plus(result.elapsed());
    if (!policy.enabled() && options.sink() == null) {
      return;
    }
    SerializedState state = stepper.serialize();
    boolean keep =
        policy.enabled() && policy.due(workSinceCapture, capture.predictedSeconds(finished, state));
    if (keep || options.sink() != null) {
      Supplier<ProgramCheckpoint> cp = checkpoint(state, backend);
      if (options.sink() != null) {
        // A sink writes the checkpoint elsewhere at once: it must be complete.
        complete(backend);
        options.sink().accept(cp.get());
      }
      if (keep) {
        keepCapture(cp);
      }
    }
  }

  /** Keeps {@code cp} as the recovery point: now if complete, else once the device synchronises. */
  private void keepCapture(Supplier<ProgramCheckpoint> cp) {
    if (capture.queued()) {
      queuedCheckpoint = cp;
    } else {
      lastCheckpoint = cp.get();
    }
  }

  private void confirmQueued() {
    capture.confirm();
    if (queuedCheckpoint != null) {
      lastCheckpoint = queuedCheckpoint.get();
      queuedCheckpoint = null;
    }
  }

  /** Waits for the device when the last capture's copies are still queued. */
  private void complete(Supplier<Backend> backend) {
    if (capture.queued()) {
      backend.get().synchronize();
      confirmQueued();
    }
  }

  /** Where the run stands now, in host memory (device tensors copied once, see HostCheckpoints). */
  private Supplier<ProgramCheckpoint> checkpoint(SerializedState state, Supplier<Backend> backend) {
    workSinceCapture = Duration.ZERO;
    return capture.capture(request.id(), finished, state, backend);
  }

  /** What this run's checkpoints have cost so far. */
  CheckpointStats checkpointStats() {
    return capture.stats();
  }

  /**
   * Drops everything the run holds on the device; its next {@link #next} resumes the loop in
   * progress from the last checkpoint (or restarts that loop when it has none). Finished loops stay
   * finished.
   */
  void rewind() {
    stepper = null;
    // A capture still queued when the fault came may be incomplete: the one before it stands.
    queuedCheckpoint = null;
    capture.forgetUnconfirmed();
    resumeFrom = lastCheckpoint;
    releaseHeld();
  }

  /**
   * Closes what the run's loops held (adapter leases), newest first; a failing close is ignored.
   */
  private void releaseHeld() {
    for (AutoCloseable r : held.reversed()) {
      try {
        r.close();
      } catch (Exception e) {
        // A lease that fails to close frees nothing more by being retried; the run is ending.
      }
    }
    held.clear();
  }

  /** Checkpoints where the run stands now (a step boundary) and drops its device state. */
  void suspend(Supplier<Backend> backend) {
    if (stepper != null) {
      Supplier<ProgramCheckpoint> cp = checkpoint(stepper.serialize(), backend);
      complete(backend);
      lastCheckpoint = cp.get();
    }
    rewind();
  }

  /** What a failed run keeps: the loop in progress's partial artifacts. */
  List<Artifact> partialArtifacts() {
    return stepper == null
        ? List.of()
        : stepper.partialArtifacts().stream().map(this::stamped).toList();
  }

  /** {@code a} naming the adapters the run resolved at acceptance (the files, by hash, it ran). */
  private Artifact stamped(Artifact a) {
    if (adapters.isEmpty()) {
      return a;
    }
    List<AppliedAdapter> applied =
        adapters.stream()
            .map(r -> new AppliedAdapter(r.name(), r.adapter().sha256(), r.scale()))
            .toList();
    return a.withProvenance(a.provenance().withAdapters(applied));
  }

  /** What the request's plugins did, summed over the loops finished in this process. */
  Map<String, Long> report() {
    return Map.copyOf(report);
  }

  GenerationResult result() {
    return new GenerationResult(request.id(), artifacts, timings, finished, overrides);
  }

  /** The context of the loop in progress. */
  private final class Context implements LoopContext {
    private final Map<String, LoopResult> upstream = Map.copyOf(finished);

    /** A loop that runs work outside its plans (none of ours) runs it at once, unbatched. */
    @Override
    public Extensions extensions() {
      return extensions;
    }

    @Override
    public StepResult execute(WorkPlan plan) {
      return plan.call().run();
    }

    @Override
    public void emit(RequestEvent event) {
      handle.emit(event);
    }

    @Override
    public CancelScope cancelScope() {
      return handle.cancelScope();
    }

    @Override
    public Map<String, LoopResult> upstream() {
      return upstream;
    }

    @Override
    public List<ResolvedAdapter> adapters() {
      return adapters;
    }

    @Override
    public void hold(AutoCloseable resource) {
      held.add(resource);
    }
  }
}
