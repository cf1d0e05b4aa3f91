package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.expected;
import static dev.stepweave.core.runtime.FakePool.request;
import static dev.stepweave.core.runtime.FakePool.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkCall;
import dev.stepweave.core.loop.WorkPlan;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * The scheduler while a model's components take turns on the device ({@link SwapScheduler} in the
 * {@link EngineCore}): steps of the awake component run first, a switch happens only when no step
 * needs the awake one or a passed-over step has waited its bound, at most once a tick, and never
 * does a step run on a sleeping component (the fake pool fails it).
 */
class ComponentSwapTest {
  private static final Instant T0 = Instant.parse("2030-01-01T00:00:00Z");
  private Instant now = T0;
  private final FakePool pool = new FakePool();

  /** A core over the fake pool whose steps take a second each on the clock, and so do switches. */
  private EngineCore core(double switchDeferral) {
    pool.turns = new FakeTurns(1000, () -> now = now.plusSeconds(1));
    pool.onStep = r -> now = now.plusSeconds(1);
    return new EngineCore(
        pool,
        EngineConfig.builder().switchDeferral(switchDeferral).build(),
        Extensions.NONE,
        () -> now);
  }

  private static RequestHandle submit(EngineCore core, String prompt, int steps) {
    return core.submit(request(prompt, steps, 256), null, RequestOptions.DEFAULT);
  }

  /** The denoise steps of {@code prompt} that ran, as the ticks they ran in (1-based). */
  private static List<Integer> ticksOf(List<String> log, String prompt) {
    List<Integer> out = new ArrayList<>();
    for (int i = 0; i < log.size(); i++) {
      if (log.get(i).contains(prompt)) {
        out.add(i + 1);
      }
    }
    return out;
  }

  /** Ticks until idle, noting per tick which requests' denoise steps ran. */
  private List<String> tickToEnd(EngineCore core) {
    List<String> log = new ArrayList<>();
    for (int tick = 0;
        tick < 100 && core.stats(true).runningLoops() + core.stats(true).queued() > 0;
        tick++) {
      int before = pool.ran.size();
      core.tick();
      StringBuilder ran = new StringBuilder();
      for (FakePool.Ran r : pool.ran.subList(before, pool.ran.size())) {
        if (r.loopId().equals("denoise")) {
          ran.append(r.prompt()).append(' ');
        }
      }
      log.add(ran.toString());
    }
    return log;
  }

  private static WorkPlan plan(String requestId, String component) {
    WorkCall call =
        new WorkCall() {
          @Override
          public StepResult run() {
            throw new UnsupportedOperationException();
          }

          @Override
          public Optional<String> awakeComponent() {
            return Optional.ofNullable(component);
          }
        };
    return new WorkPlan(
        "denoise",
        "fake",
        WorkKind.DIFFUSION_STEP,
        ShapeSignature.of("fake", 1),
        ResourceRequest.NONE,
        new CancelScope(requestId),
        0,
        call);
  }

  @Test
  void theLayerPassesOverStepsOfTheSleepingComponentUntilNoneNeedsTheAwakeOneOrTheBoundPassed() {
    SwapScheduler layer = new SwapScheduler(4);
    FakeTurns turns = new FakeTurns(1000, () -> {}); // "a" awake, 1 s a switch: a 4 s bound
    List<String> ids = List.of("r1", "r2", "r3", "r4");
    List<WorkPlan> plans =
        List.of(plan("r1", "b"), plan("r2", "a"), plan("r3", null), plan("r4", "b"));
    // Without components taking turns, everything runs in order.
    assertEquals(List.of(0, 1, 2, 3), layer.order(ids, plans, Optional.empty(), T0));
    // "a" is needed: the steps of "b" wait, however long the plans list.
    assertEquals(List.of(1, 2), layer.order(ids, plans, Optional.of(turns), T0));
    assertEquals(List.of(1, 2), layer.order(ids, plans, Optional.of(turns), T0.plusMillis(3999)));
    // r1 and r4 have waited 4 s: after a's step and the free one, b's steps run too.
    assertEquals(
        List.of(1, 2, 0, 3), layer.order(ids, plans, Optional.of(turns), T0.plusSeconds(4)));
    // Nobody needs "a": switch at once, to what the longest-waiting step needs.
    List<WorkPlan> noA = List.of(plan("r1", "b"), plan("r3", null), plan("r4", "b"));
    assertEquals(
        List.of(1, 0, 2), layer.order(List.of("r1", "r3", "r4"), noA, Optional.of(turns), T0));
    // A switch that costs nothing is never deferred.
    FakeTurns free = new FakeTurns(0, () -> {});
    assertEquals(List.of(1, 2, 0, 3), layer.order(ids, plans, Optional.of(free), T0));
  }

  @Test
  void requestsInBothPhasesSwitchOnceWhenTheAwakeComponentRunsOutOfWork() throws Exception {
    EngineCore core = core(Double.POSITIVE_INFINITY);
    // x is in its second phase after one step, y after three, z after two: the two phases overlap.
    pool.turns.plan("x", "abbb").plan("y", "aaab").plan("z", "aabb");
    RequestHandle x = submit(core, "x", 4);
    RequestHandle y = submit(core, "y", 4);
    RequestHandle z = submit(core, "z", 4);
    List<String> log = tickToEnd(core);
    for (RequestHandle h : List.of(x, y, z)) {
      assertEquals(expected(4), value(h.result().get()));
    }
    // One switch: to "b", once y's last "a" step ran; x and z waited for it.
    assertEquals(List.of("b"), pool.turns.switches);
    assertEquals(1, core.stats(true).componentSwitchSeconds().count());
    assertEquals(List.of(1, 4, 5, 6), ticksOf(log, "x"));
    assertEquals(List.of(1, 2, 3, 4), ticksOf(log, "y"));
    assertEquals(List.of(1, 2, 4, 5), ticksOf(log, "z"));
  }

  @Test
  void aPassedOverStepRunsOnceItHasWaitedItsBoundOfSwitchCosts() throws Exception {
    // Each step and each switch take 1 s; 3 switch costs: a step waits 3 s at most.
    EngineCore core = core(3);
    pool.turns.plan("long", "aaaaaaaa").plan("late", "bb");
    RequestHandle longOne = submit(core, "long", 8);
    RequestHandle late = submit(core, "late", 2);
    List<String> log = tickToEnd(core);
    assertEquals(expected(8), value(longOne.result().get()));
    assertEquals(expected(2), value(late.result().get()));
    // late was passed over at ticks 1–3 (0, 1, 2 s waited) and ran at tick 4 (3 s), after long's
    // step; then long waited for late's second step, and got "a" back as soon as late needed "b" no
    // more.
    assertEquals(List.of(4, 5), ticksOf(log, "late"));
    assertEquals(List.of(1, 2, 3, 4, 6, 7, 8, 9), ticksOf(log, "long"));
    assertEquals(List.of("b", "a"), pool.turns.switches);
  }

  @Test
  void aSwitchIsTimedApartFromTheCallAndOneThatFailsFailsOnlyTheRequestsThatNeededIt()
      throws Exception {
    EngineCore core = core(Double.POSITIVE_INFINITY);
    List<Double> predictedDuringSwitch = new ArrayList<>();
    List<RequestHandle> handles = new ArrayList<>();
    pool.turns =
        new FakeTurns(
            1000,
            () -> {
              predictedDuringSwitch.add(
                  handles.getFirst().stepInFlight().orElseThrow().predictedSeconds());
              try {
                Thread.sleep(300);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    pool.turns.plan("x", "ab");
    RequestHandle x = submit(core, "x", 2);
    handles.add(x);
    tickToEnd(core);
    assertEquals(expected(2), value(x.result().get()));
    // The step waiting for the switch is predicted to take the switch (1 s) and its call (1 ms).
    assertEquals(1, predictedDuringSwitch.size());
    assertTrue(predictedDuringSwitch.getFirst() > 1, predictedDuringSwitch.toString());
    var switches = core.stats(true).componentSwitchSeconds();
    assertEquals(1, switches.count());
    assertTrue(switches.sum() >= 0.3, "switch " + switches.sum() + " s");
    for (var call : core.profiler().callMeasurements()) {
      assertTrue(call.meanMillis() < 300, "a call measured with the switch in it: " + call);
    }

    pool.turns =
        new FakeTurns(
            1000,
            () -> {
              throw new IllegalStateException("cannot wake b");
            });
    pool.turns.plan("y", "ab").plan("z", "aa");
    RequestHandle y = submit(core, "y", 2);
    RequestHandle z = submit(core, "z", 2);
    tickToEnd(core);
    var failure = assertThrows(ExecutionException.class, () -> y.result().get());
    assertEquals("cannot wake b", failure.getCause().getMessage());
    assertEquals(expected(2), value(z.result().get()));
  }

  @Test
  void theDeferralIsANonNegativeNumberOfSwitchCosts() {
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () -> EngineConfig.builder().switchDeferral(-1).build());
    assertEquals("switchDeferral must be >= 0, got -1.0", e.getMessage());
  }
}
