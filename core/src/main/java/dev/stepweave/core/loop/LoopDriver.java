package dev.stepweave.core.loop;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.StepInfo;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import java.time.Duration;

/**
 * The only place iteration lives: plan, execute through the context, advance, emit — with
 * cancellation checked at every step boundary.
 */
public final class LoopDriver {
  private LoopDriver() {}

  /** Runs a loop from its initial state. */
  public static <S extends LoopState> LoopResult run(
      Loop<S> loop, Request request, ModelInstance model, LoopContext ctx) {
    return drive(loop, loop.init(request, model, ctx), ctx);
  }

  /** Runs a loop from a state (fresh or deserialised) to its end. */
  public static <S extends LoopState> LoopResult drive(Loop<S> loop, S state, LoopContext ctx) {
    long start = System.nanoTime();
    while (true) {
      if (ctx.cancelScope().isCancelled()) {
        throw new CancelledException(loop.id(), state.stepsDone());
      }
      Step step = loop.next(state);
      if (step instanceof Done) {
        return loop.finalize(state);
      }
      WorkPlan plan = (WorkPlan) step;
      StepResult result = ctx.execute(plan);
      Extensions ext = ctx.extensions();
      if (!ext.observers().isEmpty()) {
        ext.afterStep(
            new StepInfo(
                ctx.cancelScope().requestId(),
                plan.loopId(),
                plan.stepIndex(),
                plan.kind(),
                plan.shape()),
            result.elapsed());
      }
      state = loop.advance(state, result);
      ctx.emit(
          new RequestEvent.Step(
              ctx.cancelScope().requestId(),
              loop.id(),
              state.stepsDone(),
              state.totalSteps(),
              Duration.ofNanos(System.nanoTime() - start)));
      loop.eventsAfter(state).forEach(ctx::emit);
      if (ctx.wantsCheckpoints()) {
        ctx.checkpoint(loop.id(), loop.serialize(state));
      }
    }
  }
}
