package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.loop.Done;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopContext;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.core.loop.Step;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The loop contract's rules, checked on every loop of the Wan program with both caches on: {@code
 * next()} describes work and launches nothing (a backend that records every operation sees none
 * while a loop plans), and a step's call leaves its loop's state as it was (what the step computed
 * reaches the state only through {@code advance}; compared by the serialised state's scalars and
 * tensor contents). A deliberately broken loop shows that each rule can fail.
 */
class LoopContractTest {
  /** The backend methods that describe rather than compute. */
  private static final Set<String> NOT_LAUNCHES =
      Set.of("device", "name", "activationDType", "deviceMemory", "hashCode", "equals", "toString");

  /** A CPU backend that records the operations made while {@link #planning} is set. */
  static final class LaunchRecorder implements InvocationHandler {
    private final Backend cpu = new CpuBackend();
    final List<String> launchedWhilePlanning = new ArrayList<>();
    boolean planning;

    Backend backend() {
      return (Backend)
          Proxy.newProxyInstance(
              Backend.class.getClassLoader(), new Class<?>[] {Backend.class}, this);
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      if (planning && !NOT_LAUNCHES.contains(method.getName())) {
        launchedWhilePlanning.add(method.getName());
      }
      try {
        return method.invoke(cpu, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }

  /**
   * Drives {@code loop} to its end, checking both rules at every step.
   *
   * @throws AssertionError naming the loop, the step and the rule broken
   */
  static <S extends LoopState> LoopResult drive(
      Loop<S> loop, Request r, ModelInstance model, LoopContext ctx, LaunchRecorder recorder) {
    S s = loop.init(r, model, ctx);
    while (true) {
      recorder.launchedWhilePlanning.clear();
      recorder.planning = true;
      Step step;
      try {
        step = loop.next(s);
      } finally {
        recorder.planning = false;
      }
      assertEquals(
          List.of(),
          recorder.launchedWhilePlanning,
          loop.id() + " step " + s.stepsDone() + ": next() launched backend operations");
      if (!(step instanceof WorkPlan plan)) {
        return loop.finalize(s);
      }
      String before = fingerprint(loop.serialize(s));
      StepResult result = plan.call().run();
      assertEquals(
          before,
          fingerprint(loop.serialize(s)),
          loop.id() + " step " + s.stepsDone() + ": the call changed its loop's state");
      s = loop.advance(s, result);
    }
  }

  /** A state's scalars and the contents of its tensors. */
  private static String fingerprint(SerializedState state) {
    Map<String, String> tensors = new TreeMap<>();
    state
        .tensors()
        .forEach(
            (k, t) ->
                tensors.put(
                    k,
                    java.util.Arrays.toString(t.shape())
                        + Integer.toHexString(java.util.Arrays.hashCode(t.toFloatArray()))));
    return state.json() + " " + tensors;
  }

  @Test
  void everyWanLoopPlansWithoutLaunchingAndItsCallsLeaveTheStateAsItWas() {
    LaunchRecorder recorder = new LaunchRecorder();
    try (WanModel model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, recorder.backend())) {
      Request r =
          BlockCacheTest.request(
              "contract",
              3,
              Map.of(
                  "stepcache",
                  Map.of(
                      "threshold", "10", "warmup_steps", "1", "max_consecutive_cached_steps", "2"),
                  "fbcache",
                  Map.of("threshold", "0.5", "warmup_steps", "1")));
      LoopResult text =
          drive(
              (TextEncodeLoop) model.loop(WanCards.TEXT_ENCODE),
              r,
              model,
              BlockCacheTest.context(r, Map.of()),
              recorder);
      LoopResult denoise =
          drive(
              (DenoiseLoop) model.loop(WanCards.DENOISE),
              r,
              model,
              BlockCacheTest.context(r, Map.of(WanCards.TEXT_ENCODE, text)),
              recorder);
      assertTrue(
          denoise.report().getOrDefault("stepcache.cached_steps", 0L) > 0,
          "the step cache reused steps (its decision is what once launched work in next())");
      LoopResult decode =
          drive(
              (VaeDecodeLoop) model.loop(WanCards.VAE_DECODE),
              r,
              model,
              BlockCacheTest.context(
                  r, Map.of(WanCards.TEXT_ENCODE, text, WanCards.DENOISE, denoise)),
              recorder);
      assertEquals(9, decode.tensor(VaeDecodeLoop.VIDEO).dim(0), "9 frames [F, H, W, 3]");
    }
  }

  /** A loop that breaks both rules, so the checks above are known to fail. */
  @Test
  void aLoopThatLaunchesWhilePlanningOrMutatesInItsCallFails() {
    LaunchRecorder recorder = new LaunchRecorder();
    Backend ops = recorder.backend();
    Request r = ResumeInNewProcessTest.request();
    AssertionError planning =
        assertThrows(
            AssertionError.class, () -> drive(new BrokenLoop(ops, true), r, null, null, recorder));
    assertTrue(planning.getMessage().contains("next() launched backend operations"));
    AssertionError mutating =
        assertThrows(
            AssertionError.class, () -> drive(new BrokenLoop(ops, false), r, null, null, recorder));
    assertTrue(mutating.getMessage().contains("the call changed its loop's state"));
  }

  /** One step over a mutable holder: it either adds in {@code next()} or writes in its call. */
  private record BrokenLoop(Backend ops, boolean launchWhilePlanning)
      implements Loop<BrokenLoop.State> {
    static final class State implements LoopState {
      Tensor value = Tensor.of(new float[] {1f}, 1);
      int done;

      @Override
      public int stepsDone() {
        return done;
      }

      @Override
      public int totalSteps() {
        return 1;
      }
    }

    @Override
    public String id() {
      return "broken";
    }

    @Override
    public State init(Request request, ModelInstance model, LoopContext ctx) {
      return new State();
    }

    @Override
    public Step next(State s) {
      if (s.done == 1) {
        return Done.INSTANCE;
      }
      Tensor planned = launchWhilePlanning ? ops.add(s.value, s.value) : s.value;
      return new WorkPlan(
          id(),
          "m",
          dev.stepweave.core.card.WorkKind.DIFFUSION_STEP,
          dev.stepweave.core.loop.ShapeSignature.of("broken", 1),
          new dev.stepweave.core.loop.ResourceRequest(0, 0, 0, 0),
          new dev.stepweave.core.loop.CancelScope("broken"),
          s.done,
          () -> {
            s.value = ops.add(planned, planned); // writes its loop's state: forbidden
            return StepResult.of(s.value);
          });
    }

    @Override
    public State advance(State s, StepResult result) {
      s.done++;
      return s;
    }

    @Override
    public LoopResult finalize(State s) {
      return new LoopResult(Map.of(), List.of());
    }

    @Override
    public SerializedState serialize(State s) {
      return new SerializedState(id(), Map.of("value", s.value), "{\"done\":" + s.done + "}");
    }

    @Override
    public State deserialize(
        SerializedState data, Request request, ModelInstance model, LoopContext ctx) {
      throw new UnsupportedOperationException();
    }
  }
}
