package dev.stepweave.core.runtime;

import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.Done;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopContext;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.core.loop.Step;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;

/**
 * A model with no weights for engine tests: its card's two loops ("denoise", "decode") each add
 * their step index to a running value, so results show exactly which steps ran. {@code onStep} is
 * called inside each step's work (tests block or fail there).
 */
final class CountingModel extends WeightlessModel {
  private volatile IntConsumer onStep = i -> {};

  CountingModel(RecipeSpec recipe) {
    this(dev.stepweave.core.card.ModelCardTestCards.card(recipe));
  }

  CountingModel(dev.stepweave.core.card.ModelCard card) {
    super("counting", card);
  }

  void onStep(IntConsumer c) {
    onStep = c;
  }

  record State(float value, int done, int total, CancelScope scope) implements LoopState {
    @Override
    public int stepsDone() {
      return done;
    }

    @Override
    public int totalSteps() {
      return total;
    }
  }

  final class Counting implements Loop<State> {
    private final String id;

    Counting(String id) {
      this.id = id;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public State init(Request r, ModelInstance m, LoopContext ctx) {
      LoopResult prev = ctx.upstream().get("denoise");
      float start = prev == null ? 0 : prev.tensor("value").getFloat(0);
      return new State(start, 0, r.params().steps(), ctx.cancelScope());
    }

    @Override
    public Step next(State s) {
      if (s.done() == s.total()) {
        return Done.INSTANCE;
      }
      return new WorkPlan(
          id,
          instanceId(),
          WorkKind.DIFFUSION_STEP,
          ShapeSignature.of("count", 1),
          ResourceRequest.NONE,
          s.scope(),
          s.done(),
          () -> {
            onStep.accept(s.done());
            return StepResult.of(Tensor.of(new float[] {s.value() * 2 + s.done()}, 1));
          });
    }

    @Override
    public State advance(State s, StepResult r) {
      return new State(r.output().getFloat(0), s.done() + 1, s.total(), s.scope());
    }

    @Override
    public LoopResult finalize(State s) {
      return new LoopResult(Map.of("value", Tensor.of(new float[] {s.value()}, 1)), List.of());
    }

    @Override
    public SerializedState serialize(State s) {
      return new SerializedState(
          id,
          Map.of("value", Tensor.of(new float[] {s.value()}, 1)),
          "{\"done\":" + s.done() + "}");
    }

    @Override
    public State deserialize(SerializedState d, Request r, ModelInstance m, LoopContext ctx) {
      int done = Integer.parseInt(d.json().replaceAll("\\D", ""));
      return new State(
          d.tensors().get("value").getFloat(0), done, r.params().steps(), ctx.cancelScope());
    }
  }

  private final Map<String, Counting> loops =
      Map.of("denoise", new Counting("denoise"), "decode", new Counting("decode"));

  @Override
  Map<String, Counting> loops() {
    return loops;
  }
}
