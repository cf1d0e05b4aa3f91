package dev.stepweave.core.runtime;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopContext;
import dev.stepweave.core.loop.LoopDriver;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.program.InlineProgram;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The Java API: submit a {@link Request}, get a {@link RequestHandle}. Requests run one at a time
 * on one worker thread, each as the card's {@link InlineProgram} for its task, with every step
 * going through the {@link StepExecutor} — the one piece the multi-request scheduler replaces.
 */
public final class Engine implements AutoCloseable {
  private final ModelInstance model;
  private final StepExecutor executor;
  private final Extensions extensions;
  private final ExecutorService worker;

  public Engine(ModelInstance model) {
    this(model, StepExecutor.DIRECT);
  }

  public Engine(ModelInstance model, StepExecutor executor) {
    this(model, executor, Extensions.NONE);
  }

  /** An engine whose deployment enables {@code extensions} (plugins and observers). */
  public Engine(ModelInstance model, StepExecutor executor, Extensions extensions) {
    this.model = model;
    this.executor = executor;
    this.extensions = extensions;
    this.worker =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "stepweave-engine");
              t.setDaemon(true);
              return t;
            });
  }

  public ModelInstance model() {
    return model;
  }

  /** The deployment's extensions; their metrics count what plugins did over all requests. */
  public Extensions extensions() {
    return extensions;
  }

  private final java.util.concurrent.atomic.AtomicInteger queued =
      new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicInteger running =
      new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicLong admitted =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong rejected =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong completed =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong failed =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong cancelled =
      new java.util.concurrent.atomic.AtomicLong();

  /** What the engine is doing now. This engine runs one request at a time, unbatched. */
  public EngineStats stats() {
    return new EngineStats(
        queued.get(),
        running.get(),
        admitted.get(),
        rejected.get(),
        completed.get(),
        failed.get(),
        cancelled.get(),
        java.util.Map.of(),
        Histogram.empty(),
        Histogram.empty(),
        !worker.isShutdown());
  }

  /**
   * Validates the request and the card's recipe, then queues it.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException for a request no model can run
   * @throws dev.stepweave.core.card.RecipeRefusedException when the recipe refuses its settings
   */
  public RequestHandle submit(Request request) {
    return submit(request, null, null);
  }

  /**
   * Like {@link #submit(Request)}, handing where the run stands to {@code sink} after each step.
   */
  public RequestHandle submit(Request request, CheckpointSink sink) {
    return submit(request, null, sink);
  }

  /** Continues a run from a checkpoint written by an earlier run of the same request. */
  public RequestHandle resume(Request request, ProgramCheckpoint from, CheckpointSink sink) {
    if (!from.requestId().equals(request.id())) {
      throw new IllegalArgumentException(
          "checkpoint of request " + from.requestId() + " cannot resume request " + request.id());
    }
    return submit(request, from, sink);
  }

  private RequestHandle submit(Request request, ProgramCheckpoint from, CheckpointSink sink) {
    InlineProgram program;
    List<String> overrides;
    try {
      request.validate();
      model.validate(request);
      extensions.admit(request, model.card());
      program = InlineProgram.forTask(model.card(), request.task());
      overrides =
          model
              .card()
              .admitSettings(
                  model.samplerFor(request),
                  request.params().steps(),
                  model.precision(),
                  request.overrideRecipe())
              .stream()
              .map(Object::toString)
              .toList();
    } catch (RuntimeException e) {
      rejected.incrementAndGet();
      throw e;
    }
    RequestHandle handle = new RequestHandle(request.id());
    handle.emit(new RequestEvent.Queued(request.id()));
    queued.incrementAndGet();
    worker.execute(() -> run(program, request, handle, overrides, from, sink));
    return handle;
  }

  private void run(
      InlineProgram program,
      Request request,
      RequestHandle handle,
      List<String> overrides,
      ProgramCheckpoint from,
      CheckpointSink sink) {
    long start = System.nanoTime();
    queued.decrementAndGet();
    admitted.incrementAndGet();
    running.incrementAndGet();
    handle.emit(new RequestEvent.Started(request.id(), model.card().modelId()));
    Map<String, LoopResult> finished =
        new LinkedHashMap<>(from == null ? Map.of() : from.finished());
    Map<String, Duration> timings = new LinkedHashMap<>();
    List<Artifact> artifacts = new ArrayList<>();
    Map<String, Long> report = new java.util.TreeMap<>();
    try {
      for (String loopId : program.loopIds()) {
        if (finished.containsKey(loopId)) {
          continue;
        }
        long t0 = System.nanoTime();
        SerializedState resumeState =
            from != null && from.current().loopId().equals(loopId) ? from.current() : null;
        LoopResult result =
            runLoop(
                model.loop(loopId),
                request,
                new Context(handle, finished, loopId, sink),
                resumeState);
        timings.put(loopId, Duration.ofNanos(System.nanoTime() - t0));
        finished.put(loopId, result);
        result.report().forEach((k, v) -> report.merge(k, v, Long::sum));
        Map<String, String> reported = new java.util.TreeMap<>();
        report.forEach((k, v) -> reported.put(k, Long.toString(v)));
        for (Artifact a : result.artifacts()) {
          Artifact withOverrides =
              a.withProvenance(
                  a.provenance().withRecipeOverrides(overrides).withSettings(reported));
          artifacts.add(withOverrides);
          handle.emit(new RequestEvent.ArtifactReady(request.id(), withOverrides));
        }
      }
      handle.emit(
          new RequestEvent.Completed(request.id(), Duration.ofNanos(System.nanoTime() - start)));
      completed.incrementAndGet();
      extensions.metrics().record(report);
      handle.finish(new GenerationResult(request.id(), artifacts, timings, finished, overrides));
    } catch (CancelledException e) {
      cancelled.incrementAndGet();
      handle.emit(new RequestEvent.Cancelled(request.id(), e.loopId(), e.stepsDone()));
      handle.fail(e);
    } catch (RuntimeException | Error e) {
      String msg =
          e.getMessage() == null
              ? e.getClass().getSimpleName()
              : e.getMessage().lines().findFirst().orElse("");
      failed.incrementAndGet();
      handle.emit(new RequestEvent.Failed(request.id(), msg));
      handle.fail(e);
    } finally {
      running.decrementAndGet();
    }
  }

  private <S extends LoopState> LoopResult runLoop(
      Loop<S> loop, Request request, Context ctx, SerializedState resumeState) {
    if (resumeState == null) {
      return LoopDriver.run(loop, request, model, ctx);
    }
    return LoopDriver.drive(loop, loop.deserialize(resumeState, request, model, ctx), ctx);
  }

  @Override
  public void close() {
    worker.shutdownNow();
  }

  /** The context of one loop of one request. */
  private final class Context implements LoopContext {
    private final RequestHandle handle;
    private final Map<String, LoopResult> upstream;
    private final String requestId;
    private final CheckpointSink sink;

    Context(
        RequestHandle handle,
        Map<String, LoopResult> upstream,
        String loopId,
        CheckpointSink sink) {
      this.handle = handle;
      this.upstream = Map.copyOf(upstream);
      this.requestId = handle.requestId();
      this.sink = sink;
    }

    @Override
    public Extensions extensions() {
      return extensions;
    }

    @Override
    public StepResult execute(WorkPlan plan) {
      return executor.execute(plan);
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
    public boolean wantsCheckpoints() {
      return sink != null;
    }

    @Override
    public void checkpoint(String loopId, SerializedState state) {
      // Loop results are in run order in `upstream` (a copy of the finished map taken in order).
      Map<String, LoopResult> ordered = new LinkedHashMap<>();
      upstream.forEach(ordered::put);
      sink.accept(new ProgramCheckpoint(requestId, ordered, state));
    }
  }
}
