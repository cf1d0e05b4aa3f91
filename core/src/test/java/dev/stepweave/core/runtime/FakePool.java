package dev.stepweave.core.runtime;

import dev.stepweave.core.card.ModelCardTestCards;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.loop.BatchableCall;
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
import dev.stepweave.core.memory.Reservation;
import dev.stepweave.core.program.InlineProgram;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Provenance;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A pool with no model for scheduler tests. Its two loops ("denoise", "decode") each run {@code
 * steps} batchable steps {@code v ← 2v + i}, so a result shows exactly which steps ran. A request
 * reserves {@code width × 1000} bytes and {@code 2·steps} ms of compute at width 256 (each step is
 * {@code 1e8 · width / 256} FLOPs, 1 ms at width 256 and the default device rate); plans of equal
 * width batch together. Faults are injected per prompt: NaN output, an exception in the step body,
 * or a pool-fatal fault.
 */
final class FakePool extends WeightlessModel {
  /** A step this pool ran: whose, which loop, which step, in how large a batch. */
  record Ran(String prompt, String loopId, int step, int batchSize) {}

  /** Where a fault strikes: the prompt's request, loop, step. */
  record At(String prompt, String loopId, int step) {}

  final List<Ran> ran = Collections.synchronizedList(new ArrayList<>());
  final Map<At, String> faults = new ConcurrentHashMap<>();
  volatile java.util.function.Consumer<Ran> onStep = r -> {};

  /** Components taking turns, when a test sets them (none by default). */
  volatile FakeTurns turns;

  /** Resources the loops hold through {@link LoopContext#hold} and nobody has closed yet. */
  final java.util.concurrent.atomic.AtomicInteger held =
      new java.util.concurrent.atomic.AtomicInteger();

  FakePool() {
    this("fake");
  }

  FakePool(String instanceId) {
    super(instanceId, ModelCardTestCards.card(RecipeSpec.base()));
  }

  /** A step's FLOPs: 1e8 at width 256 (1 ms at the default rate), in proportion to the width. */
  static double flopsOf(int width) {
    return 1e8 * width / 256;
  }

  /** Each loop's steps at the FLOPs its plans state. */
  @Override
  public dev.stepweave.core.loop.WorkEstimate workEstimate(Request r) {
    int width = r.params().width();
    ResourceRequest step = new ResourceRequest(0, memoryOf(width), 0, 0, flopsOf(width), 0);
    return new dev.stepweave.core.loop.WorkEstimate(
        List.of(
            new dev.stepweave.core.loop.WorkEstimate.Phase(
                "denoise", WorkKind.DIFFUSION_STEP, r.params().steps(), step),
            new dev.stepweave.core.loop.WorkEstimate.Phase(
                "decode", WorkKind.VAE_TILE, r.params().steps(), step)));
  }

  /** A t2v request whose result names it: {@code prompt}, {@code steps} per loop, {@code width}. */
  static Request request(String prompt, int steps, int width) {
    return Request.text(
        TaskType.T2V,
        prompt,
        new DiffusionParams(
            steps, 1, 0, width, 256, 17, 8, "", Optional.of("euler"), Optional.empty()));
  }

  /** v ← 2v + i for i in 0..steps−1, twice (denoise, then decode), from 0. */
  static float expected(int steps) {
    float v = 0;
    for (int loop = 0; loop < 2; loop++) {
      for (int i = 0; i < steps; i++) {
        v = v * 2 + i;
      }
    }
    return v;
  }

  static float value(GenerationResult r) {
    return r.loopResults().get("decode").tensor("value").getFloat(0);
  }

  static long memoryOf(int width) {
    return width * 1000L;
  }

  record State(String prompt, float value, int done, int total, int width, CancelScope scope)
      implements LoopState {
    @Override
    public int stepsDone() {
      return done;
    }

    @Override
    public int totalSteps() {
      return total;
    }
  }

  /** One step: pure, batchable with steps of the same pool. */
  record Call(FakePool pool, String loopId, State s) implements BatchableCall {
    @Override
    public Object batchKey() {
      return pool;
    }

    @Override
    public StepResult run() {
      return runBatch(List.of(this)).get(0);
    }

    @Override
    public Optional<String> awakeComponent() {
      FakeTurns t = pool.turns;
      return t == null || !loopId.equals("denoise")
          ? Optional.empty()
          : t.needs(s.prompt(), s.done());
    }

    @Override
    public List<StepResult> runBatch(List<BatchableCall> calls) {
      List<StepResult> out = new ArrayList<>();
      for (BatchableCall c : calls) {
        State s = ((Call) c).s();
        String loop = ((Call) c).loopId();
        if (pool.turns != null) {
          c.awakeComponent().ifPresent(pool.turns::requireAwake);
        }
        Ran ran = new Ran(s.prompt(), loop, s.done(), calls.size());
        pool.onStep.accept(ran);
        String fault = pool.faults.get(new At(s.prompt(), loop, s.done()));
        if ("pool".equals(fault)) {
          pool.faults.remove(new At(s.prompt(), loop, s.done()));
          throw new PoolFatalException("simulated device loss");
        }
        if ("throw".equals(fault)) {
          throw new IllegalStateException("step of " + s.prompt() + " blew up\nsecond line");
        }
        pool.ran.add(ran);
        float v = "nan".equals(fault) ? Float.NaN : s.value() * 2 + s.done();
        out.add(StepResult.of(Tensor.of(new float[] {v}, 1)));
      }
      return out;
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
      held.incrementAndGet();
      ctx.hold(held::decrementAndGet);
      return new State(
          r.prompt(), start, 0, r.params().steps(), r.params().width(), ctx.cancelScope());
    }

    @Override
    public Step next(State s) {
      if (s.done() == s.total()) {
        return Done.INSTANCE;
      }
      return new WorkPlan(
          id,
          instanceId(),
          id.equals("denoise") ? WorkKind.DIFFUSION_STEP : WorkKind.VAE_TILE,
          ShapeSignature.of("fake", s.width()),
          new ResourceRequest(0, memoryOf(s.width()), 0, 0, flopsOf(s.width()), 0),
          s.scope(),
          s.done(),
          new Call(FakePool.this, id, s));
    }

    @Override
    public State advance(State s, StepResult r) {
      return new State(
          s.prompt(), r.output().getFloat(0), s.done() + 1, s.total(), s.width(), s.scope());
    }

    @Override
    public List<Artifact> partialArtifacts(State s) {
      return List.of(
          new Artifact.TensorArtifact(
              "partial_value",
              Tensor.of(new float[] {s.value()}, 1),
              new Provenance("fake", "base", id, s.scope().requestId(), 0, Map.of(), List.of())));
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
      held.incrementAndGet();
      ctx.hold(held::decrementAndGet);
      return new State(
          r.prompt(),
          d.tensors().get("value").getFloat(0),
          done,
          r.params().steps(),
          r.params().width(),
          ctx.cancelScope());
    }
  }

  private final Map<String, Counting> loops =
      Map.of("denoise", new Counting("denoise"), "decode", new Counting("decode"));

  @Override
  Map<String, Counting> loops() {
    return loops;
  }

  @Override
  public Optional<dev.stepweave.core.loop.SwappedComponents> swappedComponents() {
    return Optional.ofNullable(turns);
  }

  @Override
  public ResourceRequest footprint(Request r) {
    return new ResourceRequest(0, memoryOf(r.params().width()), 0, 0, 2e8 * r.params().steps(), 0);
  }

  /**
   * A run of {@code r}'s program on this pool, as the engine makes one at submit, reserving {@code
   * memoryBytes} (no compute, no cache blocks).
   */
  ProgramRun run(Request r, RequestOptions options, long memoryBytes) {
    return new ProgramRun(
        r,
        new RequestHandle(r.id()),
        InlineProgram.forTask(card(), r.task()),
        List.of(),
        options,
        new Reservation(r.id(), memoryBytes, 0, 0),
        null,
        Extensions.NONE,
        List.of());
  }

  /** Steps run for a prompt, in order. */
  List<Ran> ranFor(String prompt) {
    synchronized (ran) {
      return ran.stream().filter(r -> r.prompt().equals(prompt)).toList();
    }
  }
}
