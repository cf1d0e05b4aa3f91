package dev.stepweave.core.loop;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.StepInfo;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import java.time.Duration;
import java.util.List;

/**
 * One loop of one request, driven a step at a time by whoever owns iteration: {@link #next} asks
 * the loop for its next plan, the owner runs it (alone or batched with other requests' plans),
 * {@link #advance} folds the result in and emits the step's events. Cancellation is checked only
 * here, at step boundaries.
 */
public final class LoopStepper<S extends LoopState> {
  private final Loop<S> loop;
  private final LoopContext ctx;
  private final long startNanos = System.nanoTime();
  private S state;
  private WorkPlan planned;

  private LoopStepper(Loop<S> loop, S state, LoopContext ctx) {
    this.loop = loop;
    this.state = state;
    this.ctx = ctx;
  }

  /**
   * Starts a loop fresh ({@code resume == null}) or from a serialised state of the same request.
   */
  public static <S extends LoopState> LoopStepper<S> start(
      Loop<S> loop, Request request, ModelInstance model, LoopContext ctx, SerializedState resume) {
    S state =
        resume == null
            ? loop.init(request, model, ctx)
            : loop.deserialize(resume, request, model, ctx);
    return new LoopStepper<>(loop, state, ctx);
  }

  public String loopId() {
    return loop.id();
  }

  public int stepsDone() {
    return state.stepsDone();
  }

  /**
   * The next step's plan, or null when the loop is done.
   *
   * @throws CancelledException when the request was cancelled (a step boundary)
   */
  public WorkPlan next() {
    if (ctx.cancelScope().isCancelled()) {
      throw new CancelledException(loop.id(), state.stepsDone());
    }
    planned = loop.next(state) instanceof WorkPlan plan ? plan : null;
    return planned;
  }

  /**
   * Folds the result of the step {@link #next} planned in, tells the deployment's observers (if
   * any) that it ran, and emits the step event and the loop's own events.
   */
  public void advance(StepResult result) {
    Extensions ext = ctx.extensions();
    if (!ext.observers().isEmpty()) {
      ext.afterStep(
          new StepInfo(
              ctx.cancelScope().requestId(),
              planned.loopId(),
              planned.stepIndex(),
              planned.kind(),
              planned.shape()),
          result.elapsed());
    }
    state = loop.advance(state, result);
    ctx.emit(
        new RequestEvent.Step(
            ctx.cancelScope().requestId(),
            loop.id(),
            state.stepsDone(),
            state.totalSteps(),
            Duration.ofNanos(System.nanoTime() - startNanos)));
    loop.eventsAfter(state).forEach(ctx::emit);
  }

  public LoopResult finish() {
    return loop.finalize(state);
  }

  public SerializedState serialize() {
    return loop.serialize(state);
  }

  public List<Artifact> partialArtifacts() {
    return loop.partialArtifacts(state);
  }
}
